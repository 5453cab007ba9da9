# A private single-node Slurm cluster for tests, from Debian's packages (slurmctld, slurmd,
# slurm-client, munge; tools/setup.sh installs them). Source this file, then:
#
#   private_slurm_start DIR CPUS GPUS   # DIR: a new folder; every file goes there
#   sbatch ...                          # SLURM_CONF points at DIR/slurm.conf: nothing in /etc
#   private_slurm_stop                  # stops the daemons by the PIDs in DIR/*.pid
#
# munged, slurmctld and slurmd run as the calling user (root or not), talk over loopback on free
# ports (listening on loopback only where the host name resolves to a loopback address), and keep
# their state, logs and sockets in DIR. munged wants its socket reachable by every user: the
# folders above DIR must be searchable by all (mode 711 suffices); DIR is made so. CPUS may exceed
# the machine's cores (SlurmdParameters=config_overrides); the GPUS are fake gres devices, symlinks
# to /dev/null.
# private_slurm_start returns 1 with one line on stderr saying why when Slurm will not start;
# call private_slurm_stop in an EXIT trap so that the daemons never outlive the caller.

private_slurm_dir=""

# A TCP port that nothing listens on (/proc/net/tcp holds local ports in hex).
private_slurm_free_port() {
  local port
  while :; do
    port=$((20000 + RANDOM % 40000))
    grep -qi ":$(printf '%04X' "$port") " /proc/net/tcp /proc/net/tcp6 2>/dev/null || break
  done
  echo "$port"
}

# Runs a daemon in the background, its PID kept in DIR/NAME.pid, its output in DIR/log/NAME.out.
private_slurm_spawn() {
  local name=$1
  shift
  "$@" >"$private_slurm_dir/log/$name.out" 2>&1 &
  echo $! >"$private_slurm_dir/$name.pid"
}

# Waits up to 30 s for COMMAND to succeed.
private_slurm_wait_for() {
  local tries
  for ((tries = 0; tries < 300; ++tries)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  return 1
}

private_slurm_start() {
  local dir=$1 cpus=$2 gpus=$3
  private_slurm_dir=$dir
  local user host i
  user=$(id -un)
  host=$(hostname -s)
  # The daemons live in /usr/sbin, which a user's PATH may lack.
  case ":$PATH:" in *:/usr/sbin:*) ;; *) export PATH=$PATH:/usr/sbin ;; esac
  for tool in munged slurmctld slurmd sbatch scontrol sinfo squeue scancel; do
    command -v "$tool" >/dev/null || {
      echo "no $tool on PATH" >&2
      return 1
    }
  done
  # munged refuses a socket that not every user could reach (each folder on its path searchable
  # by all): DIR and its munge folder are searchable, not readable, by others.
  mkdir -p -m 711 "$dir" "$dir/munge"
  chmod 711 "$dir"
  mkdir -m 700 "$dir/log" "$dir/state" "$dir/spool" "$dir/dev"
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$dir/munge/munge.key"
  local socket=$dir/munge/munge.socket
  private_slurm_spawn munged munged --foreground --socket="$socket" \
    --key-file="$dir/munge/munge.key" --log-file="$dir/log/munged.log" \
    --pid-file="$dir/munge/munged.pid" --seed-file="$dir/munge/munged.seed"
  private_slurm_wait_for test -S "$socket" || {
    echo "munged did not start: $(tail -n 1 "$dir/log/munged.log" "$dir/log/munged.out" 2>&1 |
                                  tr '\n' ' ')" >&2
    return 1
  }

  # Slurm binds to the address the host name resolves to (NoCtldInAddrAny, NoInAddrAny), not to
  # the one configured: loopback only where the name resolves to a loopback address. Elsewhere the
  # daemons listen on every interface, on random ports, and still talk over 127.0.0.1; munge
  # authenticates every message with a key only the caller can read.
  local addr=127.0.0.1 bind=""
  local resolved
  resolved=$(getent hosts "$host" | awk '{ print $1; exit }')
  if [[ $resolved == 127.* ]]; then
    addr=$resolved
    bind=CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
  fi

  local gres=""
  for ((i = 0; i < gpus; ++i)); do ln -s /dev/null "$dir/dev/gpu$i"; done
  ((gpus > 0)) && gres="Gres=gpu:$gpus"
  cat >"$dir/slurm.conf" <<EOF
ClusterName=private
SlurmctldHost=$host($addr)
SlurmctldPort=$(private_slurm_free_port)
SlurmdPort=$(private_slurm_free_port)
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
AuthInfo=socket=$socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
# The daemons' own PID files; private_slurm_stop reads DIR/NAME.pid, written when each was started.
SlurmctldPidFile=$dir/slurmctld-own.pid
SlurmdPidFile=$dir/slurmd-own.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
# Batch jobs start at once instead of up to 3 s later.
SchedulerParameters=batch_sched_delay=0
# Finished jobs leave the controller after 5 s, so that sbatch --wait sees them end at once
# instead of backing off to 32 s between polls.
MinJobAge=5
ReturnToService=2
# A node declaring more CPUs than the machine has is taken at its word.
SlurmdParameters=config_overrides
$bind
GresTypes=gpu
NodeName=$host NodeAddr=$addr CPUs=$cpus RealMemory=1000 $gres State=UNKNOWN
PartitionName=private Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
  : >"$dir/gres.conf"
  if ((gpus > 0)); then
    echo "NodeName=$host Name=gpu File=$dir/dev/gpu[0-$((gpus - 1))]" >"$dir/gres.conf"
  fi
  export SLURM_CONF=$dir/slurm.conf

  # -i: a fresh cluster, ignoring whatever state a previous run could have left.
  private_slurm_spawn slurmctld slurmctld -D -i
  private_slurm_wait_for scontrol ping || {
    echo "slurmctld did not start: $(tail -n 2 "$dir/log/slurmctld.log" "$dir/log/slurmctld.out" \
                                     2>&1 | tr '\n' ' ')" >&2
    return 1
  }
  private_slurm_spawn slurmd slurmd -D
  private_slurm_wait_for private_slurm_node_idle || {
    echo "slurmd did not come up: $(tail -n 2 "$dir/log/slurmd.log" "$dir/log/slurmd.out" \
                                    2>&1 | tr '\n' ' ')" >&2
    return 1
  }
}

private_slurm_node_idle() {
  [ "$(sinfo -h -o %t)" = idle ]
}

# Cancels what is still queued or running, then stops the daemons by their recorded PIDs, slurmd
# first, each waited for until it is gone.
private_slurm_stop() {
  [ -n "$private_slurm_dir" ] || return 0
  local name pid tries
  if [ -f "$private_slurm_dir/slurmctld.pid" ] && scancel --user="$(id -un)" 2>/dev/null; then
    for ((tries = 0; tries < 100; ++tries)); do
      [ -z "$(squeue -h 2>/dev/null)" ] && break
      sleep 0.1
    done
  fi
  for name in slurmd slurmctld munged; do
    [ -f "$private_slurm_dir/$name.pid" ] || continue
    pid=$(cat "$private_slurm_dir/$name.pid")
    kill "$pid" 2>/dev/null || continue
    for ((tries = 0; tries < 100; ++tries)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
  done
}
