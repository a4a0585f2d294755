#!/usr/bin/env bash
# The README's two commands, timed, in a fresh clone on a host unlike the developers': a repository whose
# only branch is master, /proc/cpuinfo saying GenuineIntel "Intel(R) Xeon(R) Platinum 8480+" (bind-mounted in
# a private mount namespace: needs root), no GPU, no global git identity, de_DE.UTF-8 and TZ=Etc/GMT+12.
# Each command installs its own virtualenv from scratch, as on a new machine (pip's caches aside).
#   bash scripts/readme_on_another_host.sh      (prints each command's time and exit status; exit 1 if one failed)
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d /tmp/readme-host.XXXXXX)
git -c init.defaultBranch=master init -q --bare "$work/origin.git"
git push -q "$work/origin.git" "HEAD:refs/heads/master"
git clone -q "$work/origin.git" "$work/perfgate"
sed -e 's/^vendor_id.*/vendor_id\t: GenuineIntel/' \
  -e 's/^model name.*/model name\t: Intel(R) Xeon(R) Platinum 8480+/' /proc/cpuinfo > "$work/cpuinfo"
locale -a 2> /dev/null | grep -qi '^de_DE\.utf-\?8$' || localedef -i de_DE -f UTF-8 de_DE.UTF-8
printf '[init]\n\tdefaultBranch = master\n' > "$work/gitconfig"
echo "fresh clone in $work/perfgate, branch $(git -C "$work/perfgate" branch --show-current)"
cat > "$work/commands.sh" << 'INNER'
set -u
cd "$1"
echo "CPU: $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2), GPU: $(command -v nvidia-smi || echo none), LANG=$LANG TZ=$TZ"
rc=0
for cmd in "bash examples/cpu-quickstart/run.sh" "bash scripts/test.sh"; do
  start=$SECONDS
  $cmd > "$2/$(echo "$cmd" | tr ' /' '__').log" 2>&1 && status=0 || status=$?
  echo "\$ $cmd  ->  exit $status in $((SECONDS - start)) s: $(tail -n 1 "$2/$(echo "$cmd" | tr ' /' '__').log")"
  [ "$status" = 0 ] || rc=1
done
exit $rc
INNER
env -u CI GIT_CONFIG_GLOBAL="$work/gitconfig" GIT_CONFIG_NOSYSTEM=1 LANG=de_DE.UTF-8 LC_ALL=de_DE.UTF-8 TZ=Etc/GMT+12 \
  unshare -m bash -c 'mount --bind "$0" /proc/cpuinfo && exec bash "$1" "$2" "$3"' \
  "$work/cpuinfo" "$work/commands.sh" "$work/perfgate" "$work"
