# Sourced by run_gpu.sh: runs the steps of a GPU session against one deadline, since the lease
# is short and one command is all it fits. Each step gets its own time limit, cut to what is
# left before the deadline; a step that would get too little is skipped and said so. After
# each step the logs are packed, so whatever the session finishes comes back.
#   start_steps SECONDS [NAME...]  sets the deadline; with names, only those steps run
#   step NAME LIMIT CMD...   runs CMD, its output in $logs/NAME.log; one line in $logs/summary.txt.
#                            CMD sees its limit in STEP_SECONDS, to stop in good order before it
#   finish_steps             prints the summary
reserve_s=20  # kept back for the last packing of the logs
start_steps() {
  deadline=$(( $(date +%s) + $1 ))
  shift; chosen_steps=" $* "
  printf '%-28s %6s %8s  %s\n' step exit seconds note >"$logs/summary.txt"
}
step() {
  local name="$1" limit="$2"; shift 2
  [[ "$chosen_steps" = "  " || "$chosen_steps" = *" $name "* ]] || return 0
  local left=$(( deadline - $(date +%s) - reserve_s ))
  (( limit > left )) && limit=$left
  if (( limit < 15 )); then
    printf '%-28s %6s %8s  %s\n' "$name" - 0 "skipped: out of time" >>"$logs/summary.txt"
    return
  fi
  echo "== $name (at most ${limit}s)"
  local began=$(date +%s) rc note=""
  STEP_SECONDS=$limit timeout -k 5 "$limit" "$@" >"$logs/$name.log" 2>&1; rc=$?
  (( rc == 124 || rc == 137 )) && note="cut off at ${limit}s"
  tail -n 8 "$logs/$name.log"
  printf '%-28s %6s %8s  %s\n' "$name" "$rc" $(( $(date +%s) - began )) "$note" >>"$logs/summary.txt"
  pack_logs
}
finish_steps() {
  pack_logs
  echo "== summary"; cat "$logs/summary.txt"
}
