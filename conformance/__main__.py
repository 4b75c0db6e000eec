from tcgen05_conformance.cli import main

raise SystemExit(main())
