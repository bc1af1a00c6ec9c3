#!/usr/bin/env bash
# Makes the journal fixtures of tests/server/journal_fixtures_test.cc with a given `arbiter`
# binary. tail/ and snapshot/ (journal format 1) were made with the release before the journal
# recorded engine commands, commit 3d77801; format2/ with the release that introduced format 2
# (OUT_DIR tests/data/journal/format2); format3/ with the one that introduced format 3 (the
# snapshot in DIR/snapshot.bin beside journal.db); format4/ with the one that introduced format 4
# (a pending pod's status rewritten when the engine restates it). They are kept as those releases
# wrote them: later releases must open and replay them.
#
#   [PORT=N] tests/data/journal/make-fixtures.sh ARBITER OUT_DIR [all|restated|jobs|limits|deletes|bigjob|fill|jobdelete|jobend]
#
# Each fixture is a data directory (journal.db after a clean stop; format 3: and snapshot.bin)
# and expected.txt: one line per object as the live daemon served it just before it stopped
# (kind, namespace/name, resourceVersion; a pod's node and phase; a quota's used cpu).
#   tail       every record in the journal (--snapshot-every 0)
#   snapshot   a snapshot after record 14 and the records after it (--snapshot-every 14)
#   restated   a pending pod's reason moved with no Event (below); format3/restated was made with
#              375d8dc, whose pod-status writes are those of the last format-3 release (d331045)
#   jobs       a Job's pod deleted and replaced (below), made with 275633e (the last of format 4)
#   limits     pods and a Job's pod in a namespace with LimitRange defaults (below), made with
#              7a74634 (the last change to the daemon in format 5)
#   deletes    pods deleted twice while they shut down (below), made with 9e80595 (the last of
#              format 6)
#   bigjob     a Job of 510 pods created, then suspended (below), made with 7839f80 (the last of
#              format 7)
#   fill       another namespace's pod create in the middle of a Job's fill (below), made with
#              3063bc0 (the last of format 8)
#   jobdelete  Jobs of 1,200 and 510 pods deleted Background, Foreground, Orphan (below), made with
#              c4ed47a (the last of format 9)
#   jobend     Jobs of 1,200 pods that succeed or fail with their pods unfinished (below), made with
#              199e6b9 (the last of format 10)
set -euo pipefail
ARBITER=$1
OUT=$2
PORT=${PORT:-18743}
U=http://127.0.0.1:$PORT

req() {  # METHOD PATH [JSON]
  local code
  code=$(curl -s -o /tmp/make-fixtures.out -w '%{http_code}' -X "$1" -H "Content-Type: ${CT:-application/json}" \
    ${3:+--data "$3"} "$U$2")
  case $code in 2*) ;; *) echo "$1 $2: $code $(cat /tmp/make-fixtures.out)" >&2; exit 1 ;; esac
}
pod() {  # NS NAME CPU PRIORITYCLASS LABELS_JSON ANNOTATIONS_JSON
  req POST /api/v1/namespaces/$1/pods "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"$2\",\"labels\":$5,\"annotations\":$6},\"spec\":{\"priorityClassName\":\"$4\",\"containers\":[{\"name\":\"c\",\"image\":\"busybox\",\"resources\":{\"requests\":{\"cpu\":\"$3\",\"memory\":\"1Gi\"}}}]}}"
}
quota() {  # NS NAME CPU
  echo "{\"apiVersion\":\"v1\",\"kind\":\"ResourceQuota\",\"metadata\":{\"name\":\"$2\",\"namespace\":\"$1\"},\"spec\":{\"hard\":{\"requests.cpu\":\"$3\",\"pods\":\"10\"}}}"
}

summary() {
  {
    for path in /api/v1/nodes /api/v1/namespaces /apis/scheduling.k8s.io/v1/priorityclasses \
      /api/v1/resourcequotas /apis/policy/v1/poddisruptionbudgets /api/v1/pods /apis/batch/v1/jobs; do
      curl -s "$U$path"
    done
  } | jq -r '.items[] | [.kind, ((.metadata.namespace // "") + "/" + .metadata.name),
      "rv=" + .metadata.resourceVersion,
      (if .kind == "Pod" then "node=" + (.spec.nodeName // "") + " phase=" + .status.phase
       elif .kind == "ResourceQuota" then "used.cpu=" + (.status.used["requests.cpu"] // "")
       else empty end)] | join(" ")' | LC_ALL=C sort
}

start() {  # DIR SNAPSHOT_EVERY: a daemon on DIR/data (pid in $pid)
  rm -rf "$1"
  mkdir -p "$1"
  "$ARBITER" serve --data "$1/data" --listen 127.0.0.1:$PORT --snapshot-every "$2" \
    --snapshot-growth 0 2>"$1/serve.log" &
  pid=$!
  trap 'kill $pid 2>/dev/null || true' EXIT  # (a refused request stops the script)
  for _ in $(seq 100); do curl -s "$U/readyz" >/dev/null && break; sleep 0.1; done
}

finish() {  # DIR: expected.txt, then a clean stop; only the data files are kept
  summary >"$1/expected.txt"
  kill -TERM $pid
  wait $pid
  rm -f "$1/data/journal.db-wal" "$1/data/journal.db-shm"
  find "$1/data" -mindepth 1 ! -name journal.db ! -name snapshot.bin -exec rm -rf {} +
  rm -f "$1/serve.log"
}

one() {  # NAME SNAPSHOT_EVERY
  local dir=$OUT/$1
  start "$dir" "$2"
  req POST /api/v1/nodes '{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},"status":{"capacity":{"cpu":"8","memory":"32Gi","pods":"110"}}}'
  req POST /api/v1/nodes '{"apiVersion":"v1","kind":"Node","metadata":{"name":"n2"},"status":{"capacity":{"cpu":"4","memory":"16Gi","pods":"110"}}}'
  req POST /api/v1/namespaces '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-a"}}'
  req POST /api/v1/namespaces '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-b"}}'
  for pc in high:10000 low:1000 doomed:500; do
    req POST /apis/scheduling.k8s.io/v1/priorityclasses "{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":\"PriorityClass\",\"metadata\":{\"name\":\"${pc%%:*}\"},\"value\":${pc##*:}}"
  done
  req POST /api/v1/namespaces/team-a/resourcequotas "$(quota team-a compute 6)"
  req POST /apis/policy/v1/namespaces/team-a/poddisruptionbudgets '{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"web"},"spec":{"minAvailable":1,"selector":{"matchLabels":{"app":"web"}}}}'
  req POST /apis/policy/v1/namespaces/team-b/poddisruptionbudgets '{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"gone"},"spec":{"maxUnavailable":1,"selector":{"matchLabels":{"app":"batch"}}}}'
  pod team-a web-1 2 high '{"app":"web"}' '{}'
  pod team-a web-2 2 high '{"app":"web"}' '{}'
  pod team-b batch-1 3 low '{"app":"batch"}' '{}'
  pod team-b short 1 low '{"app":"batch"}' '{"arbiter.dev/duration":"1s"}'
  # A pod no node fits (team-a/big until format 3: a create no quota can ever admit is refused now).
  pod team-b big 16 low '{}' '{}'
  pod team-b batch-2 3 low '{"app":"batch"}' '{}'
  # Updates: the quota raised, a pod's labels changed.
  req GET /api/v1/namespaces/team-a/resourcequotas/compute
  req PUT /api/v1/namespaces/team-a/resourcequotas/compute "$(quota team-a compute 8)"
  CT=application/merge-patch+json req PATCH /api/v1/namespaces/team-a/pods/web-1 '{"metadata":{"labels":{"app":"web","tier":"front"}}}'
  # Deletes: a running pod at once, a PDB, a priority class.
  req DELETE '/api/v1/namespaces/team-b/pods/batch-1?gracePeriodSeconds=0'
  req DELETE /apis/policy/v1/namespaces/team-b/poddisruptionbudgets/gone
  req DELETE /apis/scheduling.k8s.io/v1/priorityclasses/doomed
  pod team-a web-3 1 high '{"app":"web"}' '{}'
  sleep 2  # team-b/short (1s) finishes: an advance record
  finish "$dir"
}

# A pending pod's reservation moves with no Event: pod b waits for the room of pod a, which runs
# past its activeDeadlineSeconds (arbiter does not kill it), so b is reserved "from" the instant
# of each cycle; the cycle a Namespace's create runs moves it. Releases of formats 1-3 left b's
# stored status as it was (their walk of the pending pods followed only cycles with Events);
# format 4 rewrites it (the engine restated it).
restated() {
  local dir=$OUT/restated
  start "$dir" 0
  req POST /api/v1/nodes '{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},"status":{"capacity":{"cpu":"4","memory":"32Gi","pods":"110"}}}'
  req POST /api/v1/namespaces/default/pods '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"activeDeadlineSeconds":1,"containers":[{"name":"c","image":"busybox","resources":{"requests":{"cpu":"4"}}}]}}'
  req POST /api/v1/namespaces/default/pods '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b"},"spec":{"containers":[{"name":"c","image":"busybox","resources":{"requests":{"cpu":"4"}}}]}}'
  sleep 2
  req POST /api/v1/namespaces '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"later"}}'
  finish "$dir"
}

# A Job's pod deleted and replaced, and another Job suspended and resumed at once: releases of
# formats 1-4 named a Job's pods from a count started at 0 at each sync (the replacement of the
# Job's first pod took its name) and backed the resume off; format 5 names them from the store's
# resourceVersion and resumes at once. (format4/jobs was made alone, with 275633e.)
jobs() {
  local dir=$OUT/jobs first
  start "$dir" 0
  req POST /api/v1/nodes '{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},"status":{"capacity":{"cpu":"8","memory":"32Gi","pods":"110"}}}'
  req POST /apis/batch/v1/namespaces/default/jobs '{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"train"},"spec":{"parallelism":2,"completions":4,"template":{"metadata":{"annotations":{"arbiter.dev/duration":"1h"}},"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox","resources":{"requests":{"cpu":"1"}}}]}}}}'
  first=$(curl -s "$U/api/v1/namespaces/default/pods" |
    jq -r '.items | sort_by(.metadata.resourceVersion | tonumber) | .[0].metadata.name')
  req DELETE "/api/v1/namespaces/default/pods/$first?gracePeriodSeconds=0"
  # (counted as failed: replaced after the back-off, 10 s)
  for _ in $(seq 30); do
    curl -sf "$U/api/v1/namespaces/default/pods/$first" >/dev/null && break
    sleep 1
  done
  curl -sf "$U/api/v1/namespaces/default/pods/$first" >/dev/null ||
    { echo "make-fixtures.sh: the replacement of $first was named otherwise" >&2; exit 1; }
  # Another Job suspended and resumed at once: the pods the suspend deleted (20 s to exit) backed
  # the resume off (10 s a pod).
  req POST /apis/batch/v1/namespaces/default/jobs '{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"held"},"spec":{"parallelism":2,"completions":2,"template":{"metadata":{"annotations":{"arbiter.dev/duration":"1h","arbiter.dev/shutdown-time":"20s"}},"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox","resources":{"requests":{"cpu":"1"}}}]}}}}'
  CT=application/merge-patch+json req PATCH /apis/batch/v1/namespaces/default/jobs/held '{"spec":{"suspend":true}}'
  CT=application/merge-patch+json req PATCH /apis/batch/v1/namespaces/default/jobs/held '{"spec":{"suspend":false}}'
  for _ in $(seq 30); do
    [ "$(curl -s "$U/apis/batch/v1/namespaces/default/jobs/held" | jq '.status.active // 0')" = 2 ] && break
    sleep 1
  done
  finish "$dir"
}

# Pods created beside a LimitRange with defaults: releases of formats 1-5 stored them as sent (the
# engine charged the defaults); format 6 writes the defaults, a limit's request and the
# kubernetes.io/limit-ranger annotation into the pod, as kube-apiserver does.
limits() {
  local dir=$OUT/limits
  start "$dir" 0
  req POST /api/v1/nodes '{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},"status":{"capacity":{"cpu":"8","memory":"32Gi","pods":"110"}}}'
  req POST /api/v1/namespaces/default/limitranges '{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"defaults"},"spec":{"limits":[{"type":"Container","default":{"cpu":"500m","memory":"256Mi"},"defaultRequest":{"cpu":"250m"}}]}}'
  req POST /api/v1/namespaces/default/pods '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bare","annotations":{"arbiter.dev/duration":"1h"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}'
  req POST /api/v1/namespaces/default/pods '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"limited","annotations":{"arbiter.dev/duration":"1h"}},"spec":{"containers":[{"name":"c","image":"busybox","resources":{"limits":{"cpu":"1"}}}]}}'
  req POST /apis/batch/v1/namespaces/default/jobs '{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"batch"},"spec":{"template":{"metadata":{"annotations":{"arbiter.dev/duration":"1h"}},"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}'
  finish "$dir"
}

# Pods deleted while they shut down (10 min, grace 600 s), then deleted again: releases of formats
# 1-6 wrote the delete's instant as the deletionTimestamp and rewrote it at every delete, whatever
# its grace; format 7 writes when the grace ends, and only a shorter grace changes it and ends the
# shutdown sooner.
deletes() {
  local dir=$OUT/deletes p
  start "$dir" 0
  req POST /api/v1/nodes '{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},"status":{"capacity":{"cpu":"8","memory":"32Gi","pods":"110"}}}'
  for p in forced longer; do
    req POST /api/v1/namespaces/default/pods "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"$p\",\"annotations\":{\"arbiter.dev/duration\":\"1h\",\"arbiter.dev/shutdown-time\":\"10m\"}},\"spec\":{\"terminationGracePeriodSeconds\":600,\"containers\":[{\"name\":\"c\",\"image\":\"busybox\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}"
    req DELETE /api/v1/namespaces/default/pods/$p
  done
  sleep 1
  req DELETE '/api/v1/namespaces/default/pods/forced?gracePeriodSeconds=0'
  req DELETE '/api/v1/namespaces/default/pods/longer?gracePeriodSeconds=900'
  sleep 1
  finish "$dir"
}

# A Job of 510 pods created, then suspended: releases of formats 1-7 made every pod in the Job
# create's record and deleted every one in the suspend's; format 8 makes and deletes at most 500 a
# sync, the rest in the clock's next advance.
bigjob() {
  local dir=$OUT/bigjob
  start "$dir" 0
  req POST /api/v1/nodes '{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},"status":{"capacity":{"cpu":"64","memory":"256Gi","pods":"1000"}}}'
  req POST /apis/batch/v1/namespaces/default/jobs '{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"wide"},"spec":{"parallelism":510,"completions":510,"template":{"metadata":{"annotations":{"arbiter.dev/duration":"1h"}},"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox","resources":{"requests":{"cpu":"100m"}}}]}}}}'
  CT=application/merge-patch+json req PATCH /apis/batch/v1/namespaces/default/jobs/wide '{"spec":{"suspend":true}}'
  sleep 1
  finish "$dir"
}

# A Job of 505 pods whose fill another namespace's pod create interrupts: the Job's create makes
# 500 pods, and releases of format 8 made the other 5 in the first record after it, whichever it
# was (any mutation synced the Jobs due); format 9 makes them in the clock's advance alone. The
# foreign creates race the clock for the daemon's lock: tried until one of them made the 5 (the
# journal says which record did).
fill() {
  local dir=$OUT/fill try
  for try in $(seq 20); do
    start "$dir" 0
    req POST /api/v1/nodes '{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},"status":{"capacity":{"cpu":"64","memory":"256Gi","pods":"1000"}}}'
    req POST /api/v1/namespaces '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"other"}}'
    req POST /apis/batch/v1/namespaces/default/jobs '{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"wide"},"spec":{"parallelism":505,"completions":505,"template":{"metadata":{"annotations":{"arbiter.dev/duration":"1h"}},"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox","resources":{"requests":{"cpu":"100m"}}}]}}}}' &
    local job=$! i
    local pids=()
    sleep 0.01
    for i in $(seq 6); do
      curl -s -o /dev/null -X POST -H 'Content-Type: application/json' \
        --data "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p$i\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\",\"resources\":{\"requests\":{\"cpu\":\"100m\"}}}]}}" \
        "$U/api/v1/namespaces/other/pods" &
      pids+=($!)
    done
    wait $job "${pids[@]}"
    sleep 1
    finish "$dir"
    # The record after the Job's create: a pod create of namespace other that made Job pods too.
    if sqlite3 "$dir/data/journal.db" "SELECT record FROM journal WHERE seq = (SELECT seq FROM journal
        WHERE record LIKE '%\"kind\":\"Job\"%') + 1 AND record LIKE '%\"namespace\":\"other\"%'
        AND length(commands) > 2000" | grep -q .; then
      return
    fi
    echo "fill: try $try: the clock's advance came first; again" >&2
  done
  echo "fill: no foreign create came between the Job's create and the clock's advance" >&2
  exit 1
}

# Three Jobs deleted with each propagationPolicy: releases of formats 1-9 deleted or released
# every pod in the delete's record (Foreground: took every finalizer off in its sync); format 10
# acts on 500 there, the garbage collector's next advances on the rest. The first Job has 1,200
# pods: format 9 made 500 in its create and 500 and 200 in the clock's advances (format 10: 200
# an advance).
jobdelete() {
  local dir=$OUT/jobdelete policy n
  start "$dir" 0
  req POST /api/v1/nodes '{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},"status":{"capacity":{"cpu":"640","memory":"2Ti","pods":"3000"}}}'
  for policy in Background Foreground Orphan; do
    n=$([ $policy = Background ] && echo 1200 || echo 510)
    req POST /apis/batch/v1/namespaces/default/jobs "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"${policy,,}\"},\"spec\":{\"parallelism\":$n,\"completions\":$n,\"template\":{\"metadata\":{\"annotations\":{\"arbiter.dev/duration\":\"1h\",\"arbiter.dev/shutdown-time\":\"10m\"}},\"spec\":{\"restartPolicy\":\"Never\",\"terminationGracePeriodSeconds\":600,\"containers\":[{\"name\":\"c\",\"image\":\"busybox\",\"resources\":{\"requests\":{\"cpu\":\"100m\"}}}]}}}}"
  done
  sleep 1
  for policy in Background Foreground Orphan; do
    req DELETE "/apis/batch/v1/namespaces/default/jobs/${policy,,}" "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"propagationPolicy\":\"$policy\"}"
  done
  sleep 1
  finish "$dir"
}

# Two Jobs that end with pods unfinished. "first" (Indexed, 1,200 pods; index 0 started half a
# second before the others) meets its successPolicy when index 0 succeeds, its other pods running.
# "late" (1,200 pods, podReplacementPolicy Failed) has all its pods deleted by a user (they shut
# down for 10 minutes, terminating, not failed: no replacement) and then fails at its
# activeDeadlineSeconds, the last record. Releases of formats 1-10 took every unfinished pod's
# tracking finalizer off (failing: counted each in status.failed) in the sync that ended the Job;
# format 11 takes them off a sync's worth at a time (the rest at later advances, which this
# journal does not have for "late").
jobend() {
  local dir=$OUT/jobend
  local tmpl='"template":{"metadata":{"annotations":{"arbiter.dev/duration":"DURATION","arbiter.dev/shutdown-time":"10m"}},"spec":{"restartPolicy":"Never","terminationGracePeriodSeconds":600,"containers":[{"name":"c","image":"busybox","resources":{"requests":{"cpu":"100m"}}}]}}'
  start "$dir" 0
  req POST /api/v1/nodes '{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},"status":{"capacity":{"cpu":"640","memory":"2Ti","pods":"3000"}}}'
  req POST /apis/batch/v1/namespaces/default/jobs "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"first\"},\"spec\":{\"completionMode\":\"Indexed\",\"parallelism\":1,\"completions\":1200,\"successPolicy\":{\"rules\":[{\"succeededIndexes\":\"0\"}]},${tmpl/DURATION/2s}}}"
  req POST /apis/batch/v1/namespaces/default/jobs "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"late\"},\"spec\":{\"parallelism\":1200,\"completions\":1200,\"activeDeadlineSeconds\":4,\"podReplacementPolicy\":\"Failed\",${tmpl/DURATION/1h}}}"
  sleep 0.5
  CT=application/merge-patch+json req PATCH /apis/batch/v1/namespaces/default/jobs/first '{"spec":{"parallelism":1200}}'
  sleep 0.5
  req DELETE '/api/v1/namespaces/default/pods?labelSelector=job-name%3Dlate'
  sleep 4.5
  finish "$dir"
}

case ${3:-all} in
  all)
    one tail 0
    one snapshot 14
    restated
    ;;
  restated) restated ;;  # (format3/restated was made alone, with a later format-3 release)
  jobs) jobs ;;
  limits) limits ;;
  deletes) deletes ;;
  bigjob) bigjob ;;
  fill) fill ;;
  jobdelete) jobdelete ;;
  jobend) jobend ;;
  *) echo "make-fixtures.sh: unknown fixture set $3 (all, restated, jobs, limits, deletes, bigjob, fill, jobdelete, jobend)" >&2; exit 2 ;;
esac
