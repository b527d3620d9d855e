#!/usr/bin/env bash
# Regenerates incrbyfloat_golden.txt: random decimal pairs added in real x87 long double by glibc
# (strtold, +, printf "%.17Lf", zeros trimmed, "-0" -> "0": Redis's INCRBYFLOAT), the oracle for
# locus-server's emulation (src/exec/longdouble.rs). Needs gcc on x86-64 Linux and python3.
set -euo pipefail
cd "$(dirname "$0")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat > "$work/ld.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void){
  char a[256], b[256];
  while (scanf("%255s %255s", a, b) == 2) {
    long double v = strtold(a, NULL) + strtold(b, NULL);
    char buf[6000];
    int l = snprintf(buf, sizeof buf, "%.17Lf", v);
    if (strchr(buf,'.')) { char *p = buf + l - 1; while (*p=='0') {p--; l--;} if (*p=='.') l--; }
    buf[l] = 0;
    if (l == 2 && buf[0]=='-' && buf[1]=='0') { buf[0]='0'; buf[1]=0; }
    printf("%s %s %s\n", a, b, buf);
  }
  return 0;
}
C
gcc -O1 -o "$work/ld" "$work/ld.c"
python3 - > "$work/in.txt" <<'PY'
import random
random.seed(7)
def num():
    k = random.random()
    if k < 0.3: return str(random.randint(-10**random.randint(1, 20), 10**random.randint(1, 20)))
    if k < 0.6: return f"{random.uniform(-1e6, 1e6):.{random.randint(0, 12)}f}"
    if k < 0.8: return f"{random.randint(1, 99)}.{random.randint(0, 999)}e{random.randint(-25, 25)}"
    return random.choice(["0.1", "0.2", "0.3", "1e-20", "9223372036854775807", "-9223372036854775808",
                          "3.0e2", "2.25", "1.5", "17179869184", "0.0000001", "123456789.987654321"])
for _ in range(1000):
    print(num(), num())
PY
"$work/ld" < "$work/in.txt" > incrbyfloat_golden.txt
echo "wrote $(wc -l < incrbyfloat_golden.txt) lines to $(pwd)/incrbyfloat_golden.txt"
