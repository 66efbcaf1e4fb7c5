#!/usr/bin/env bash
# JVM tests of android_demo/core with javac/java and Debian's JUnit 4 only (no Gradle, no network).
#
#   android_demo/run_jvm_tests.sh [FIXTURE_DIR ...]
#
# Compiles core/src/main and core/src/test into a temporary directory and runs them with
# org.junit.runner.JUnitCore: CoreUnitTest and VectorIndexTest always, ParityTest once per FIXTURE_DIR written by
#   python tools/android_parity.py BUNDLE HEAD_DIR FIXTURE_DIR
# and IndexParityTest once per FIXTURE_DIR that holds an index.lwxindex.
# With no FIXTURE_DIR only the fixture-free unit tests run.
# Needs: javac/java >= 17 (apt-get install default-jdk-headless), junit4 + hamcrest jars
# (apt-get install junit4) and the SQLite JDBC driver that reads index files in the tests
# (apt-get install libxerial-sqlite-jdbc-java); override their paths with JUNIT_JAR / HAMCREST_JAR /
# SQLITE_JDBC_JAR (':'-separated if the driver needs more jars, e.g. slf4j-api for newer drivers).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
JUNIT_JAR="${JUNIT_JAR:-/usr/share/java/junit4.jar}"
HAMCREST_JAR="${HAMCREST_JAR:-/usr/share/java/hamcrest-core.jar}"
SQLITE_JDBC_JAR="${SQLITE_JDBC_JAR:-/usr/share/java/sqlite-jdbc.jar}"

for tool in javac java; do
  command -v "$tool" >/dev/null || { echo "run_jvm_tests.sh: $tool not found (apt-get install default-jdk-headless)" >&2; exit 2; }
done
for jar in "$JUNIT_JAR" "$HAMCREST_JAR"; do
  [ -f "$jar" ] || { echo "run_jvm_tests.sh: $jar not found (apt-get install junit4, or set JUNIT_JAR/HAMCREST_JAR)" >&2; exit 2; }
done
IFS=: read -r -a sqlite_jars <<< "$SQLITE_JDBC_JAR"
for jar in "${sqlite_jars[@]}"; do
  [ -f "$jar" ] || { echo "run_jvm_tests.sh: SQLite JDBC driver $jar not found (apt-get install libxerial-sqlite-jdbc-java, or set SQLITE_JDBC_JAR)" >&2; exit 2; }
done

fixtures=""
tests="ai.lwxedge.core.CoreUnitTest ai.lwxedge.core.VectorIndexTest"
with_index=0
for d in "$@"; do
  [ -f "$d/tokens.json" ] || { echo "run_jvm_tests.sh: $d is not a fixture directory (no tokens.json); write one with tools/android_parity.py" >&2; exit 2; }
  abs="$(cd "$d" && pwd)"
  fixtures="${fixtures:+$fixtures:}$abs"
  [ -f "$d/index.lwxindex" ] && with_index=1
done
[ -n "$fixtures" ] && tests="$tests ai.lwxedge.core.ParityTest"
[ "$with_index" = 1 ] && tests="$tests ai.lwxedge.core.IndexParityTest"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/lwx-jvm.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
# a small, single-threaded-ish JVM: this runs beside other work in CI
jopts=(-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss4m)
javac_opts=(-J-XX:+UseSerialGC -J-XX:TieredStopAtLevel=1 -encoding UTF-8 --release 17 -Xlint:all,-serial -Werror)

mapfile -t main_src < <(find "$here/core/src/main/java" -name '*.java' | sort)
mapfile -t test_src < <(find "$here/core/src/test/java" -name '*.java' | sort)
javac "${javac_opts[@]}" -d "$tmp/main" "${main_src[@]}"
javac "${javac_opts[@]}" -cp "$tmp/main:$JUNIT_JAR:$HAMCREST_JAR" -d "$tmp/test" "${test_src[@]}"

# shellcheck disable=SC2086
exec java "${jopts[@]}" -Dlwx.fixtures="$fixtures" -Dfile.encoding=UTF-8 \
  -cp "$tmp/main:$tmp/test:$JUNIT_JAR:$HAMCREST_JAR:$SQLITE_JDBC_JAR" org.junit.runner.JUnitCore $tests
