"""`decode`: an instruction descriptor, shared-memory descriptor, zero-column mask or TMEM address,
field by field."""

from __future__ import annotations

import argparse
from dataclasses import asdict

from tcgen05_conformance.cli.common import EXIT_OK, UsageError, print_json
from tcgen05_conformance.core.encoding import idesc, sdesc, taddr, zcmask
from tcgen05_conformance.core.isa.mma import KINDS, SHAPE_CLASSES

# A zero-column mask is an operand of .ws MMAs only (PTX ISA 9.7.16.10.9.3): M and N of Table 39's .ws rows.
ZCMASK_M = tuple(sorted({c.m for c in SHAPE_CLASSES if c.ws}))
ZCMASK_N = tuple(sorted({n for c in SHAPE_CLASSES if c.ws for n in c.n}))


def _word(text: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise UsageError(f"{text[:60]!r} is not an integer (use 0x... for hexadecimal)") from None


def add(sub) -> None:
    dec = sub.add_parser("decode", help="explain an instruction descriptor, shared-memory descriptor, "
                                        "zero-column mask or TMEM address")
    dec.add_argument("what", choices=("idesc", "sdesc", "zcmask", "taddr"),
                     help="the word's kind: instruction descriptor, shared-memory descriptor, zero-column mask or TMEM address")
    dec.add_argument("value", help="the word, e.g. 0x08200490")
    dec.add_argument("--kind", default="f16", choices=KINDS, help="MMA kind of an idesc (default f16)")
    dec.add_argument("--variant", default="tcgen05", choices=sdesc.VARIANTS, help="sdesc layout (default tcgen05)")
    dec.add_argument("--m", type=int, choices=ZCMASK_M, help="M of the .ws MMA, to generate a zero-column mask")
    dec.add_argument("--n", type=int, choices=ZCMASK_N, help="N of the .ws MMA, to generate a zero-column mask")
    dec.add_argument("--json", action="store_true", help="print the fields and the decoded value as JSON")
    dec.set_defaults(func=cmd_decode)


def cmd_decode(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    word = _word(args.value)
    if args.what == "idesc":
        rows = idesc.explain(args.kind, word)
        meaning = asdict(idesc.decode(args.kind, word))
    elif args.what == "sdesc":
        rows = sdesc.explain(word, args.variant)
        meaning = asdict(sdesc.decode(word, args.variant))
    elif args.what == "zcmask":
        if (args.m is None) != (args.n is None):
            raise UsageError("give both --m and --n to see the generated mask")
        rows = zcmask.explain(word, args.m, args.n)
        meaning = asdict(zcmask.decode(word))
        if args.m is not None:
            meaning["mask"] = hex(zcmask.generate_mask(zcmask.decode(word), args.m, args.n))
    else:
        rows = taddr.explain(word)
        lane, column = taddr.decode(word)
        meaning = {"lane": lane, "column": column}
    if args.json:
        print_json({"value": hex(word), "fields": [dict(zip(("bits", "field", "raw", "meaning"), r)) for r in rows],
                    "decoded": meaning})
    else:
        print(f"{args.what} {word:#x}")
        print(tabulate(rows, ["bits", "field", "raw", "meaning"], tablefmt="simple"))
    return EXIT_OK
