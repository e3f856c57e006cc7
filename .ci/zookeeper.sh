#!/usr/bin/env bash
# Installs the ZooKeeper server the pulsar-server tests run against (Debian package `zookeeper`,
# which brings a Java runtime), unless it is already there. `cargo xtask test` starts and stops
# the server itself; this script only makes sure the jars exist.
set -euo pipefail

if [[ -f /usr/share/java/zookeeper.jar && -f /usr/share/java/slf4j-api.jar ]] && command -v java >/dev/null 2>&1; then
  echo "zookeeper.sh: ZooKeeper is installed"
  exit 0
fi

echo "zookeeper.sh: installing the zookeeper package"
if [[ $(id -u) -eq 0 ]]; then SUDO=""; else SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends zookeeper

test -f /usr/share/java/zookeeper.jar || { echo "zookeeper.sh: /usr/share/java/zookeeper.jar still missing" >&2; exit 1; }
echo "zookeeper.sh: installed"
