# A simulator that misbehaves as it is told, for fuzzing the sim:CMD protocol
# (conformance/fuzz/simulator.py). Run as `sh fuzz_simulator_agent.sh DIR`: for each request
# line it takes the request's "out" folder and runs DIR/act.sh, which the fuzzer rewrites before
# each case (noise on stderr, an exit, a signal, a closed stdout or a hang, a delay, the state
# files, the answer line, what follows it). A shell starts in milliseconds, so the thousands of
# restarts a faulty simulator causes cost little.
B="$1"
while IFS= read -r line; do
    out=${line##*\"out\": \"}
    out=${out%%\"*}
    . "$B/act.sh"
done
