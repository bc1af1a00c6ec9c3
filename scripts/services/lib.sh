# Shared by scripts/services/*.sh (sourced, not run): the few things every service script does —
# install Debian packages without letting them start daemons, wait for readiness with a deadline,
# and stop a server by its PID. Messages go to stdout prefixed with "$SVC: ".

# alive PID: the process exists and is not a zombie (PID 1 here may reap orphans late).
alive() {
  local st
  st=$(ps -o stat= -p "$1" 2>/dev/null | cut -c1) || return 1
  [ -n "$st" ] && [ "$st" != Z ]
}

# svc_apt_install PKG...: installs the packages not yet installed. Package scripts must not start
# the packaged daemons (no systemd here; they would take the default ports): a policy-rc.d exiting
# 101 forbids it while apt-get runs, and is removed afterwards when this function put it there (a
# policy-rc.d of the machine's own is left alone), so later installs start services as usual.
svc_apt_install() {
  local missing=() p sudo="" ours="" rc=0
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\n# arbiter: scripts/services/lib.sh, while it installs packages\nexit 101\n' |
      $sudo tee /usr/sbin/policy-rc.d > /dev/null
    $sudo chmod +x /usr/sbin/policy-rc.d
    ours=1
  fi
  echo "$SVC: installing ${missing[*]}"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq || rc=$?
  [ $rc -ne 0 ] || $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends "${missing[@]}" > /dev/null || rc=$?
  [ -z "$ours" ] || $sudo rm -f /usr/sbin/policy-rc.d
  return $rc
}

# svc_wait_ready DEADLINE PID LOG... -- CMD...: runs CMD every 0.1 s until it succeeds. Fails
# (printing the end of each LOG file) when the process PID exits first or DEADLINE seconds pass.
svc_wait_ready() {
  local secs=$1 end=$((SECONDS + $1)) pid=$2 logs=()
  shift 2
  while [ "$1" != -- ]; do logs+=("$1"); shift; done
  shift
  until "$@" > /dev/null 2>&1; do
    if ! alive "$pid"; then
      echo "$SVC: exited during start:"
      tail -n 20 "${logs[@]}" 2>/dev/null
      return 1
    fi
    if [ $SECONDS -ge "$end" ]; then
      echo "$SVC: not ready after $secs s"
      tail -n 20 "${logs[@]}" 2>/dev/null
      return 1
    fi
    sleep 0.1
  done
}

# svc_stop_pid PID [SIGNAL]: sends SIGNAL (default TERM), waits up to 20 s for the process to
# exit (a zombie has exited), then SIGKILL.
svc_stop_pid() {
  local pid=$1 sig=${2:-TERM} end=$((SECONDS + 20))
  alive "$pid" || return 0
  kill -"$sig" "$pid" 2>/dev/null || true
  while alive "$pid" && [ $SECONDS -lt $end ]; do sleep 0.1; done
  if alive "$pid"; then
    echo "$SVC: still running after 20 s, SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    end=$((SECONDS + 5))
    while alive "$pid" && [ $SECONDS -lt $end ]; do sleep 0.1; done
  fi
  return 0
}
