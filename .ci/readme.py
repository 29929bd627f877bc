"""Runs README.md's walkthrough: every top-level ```sh block (but those of sections that need
a cluster), in order, in one bash, against a fresh `gatehouse` started in an empty folder —
as a reader would paste them. Each `curl` must answer 2xx/3xx, or the status written after it
(`# → 400 …` on its line or the next). `cargo run -q --` runs the given binary.

Usage: python3 .ci/readme.py path/to/gatehouse"""
import os
import re
import shlex
import socket
import subprocess
import sys
import tempfile
import time

SKIP_SECTIONS = {"Running on ScyllaDB"}


def blocks(text):
    """(first line number, lines) of each runnable sh block."""
    section = ""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("## "):
            section = line[3:].strip()
        if line == "```sh":
            start = i + 1
            j = start
            while lines[j] != "```":
                j += 1
            if section not in SKIP_SECTIONS:
                yield start + 1, lines[start:j]
            i = j
        i += 1


def expected(line, following):
    """The status written on the command's line or on a comment line right after it."""
    for text in (line, following if following.lstrip().startswith("#") else ""):
        m = re.search(r"#\s*→\s*(\d{3})\b", text)
        if m:
            return m.group(1)
    return "ok"


def script(readme, binary, port):
    out = [
        "set -euo pipefail",
        'HDR="$PWD/.last-headers"',
        'curl() { : > "$HDR"; command curl -D "$HDR" "$@"; }',
        "__expect() {",
        '  got=$(awk \'/^HTTP\\//{s=$2} END{print s}\' "$HDR")',
        '  if [ "$1" = ok ]; then case "$got" in 2??|3??) return 0;; esac',
        '  elif [ "$got" = "$1" ]; then return 0; fi',
        '  echo; echo "README.md:$2: expected ${1/ok/2xx or 3xx}, got ${got:-no answer}" >&2',
        "  exit 1",
        "}",
    ]
    for first, lines in blocks(readme):
        k = 0
        while k < len(lines):
            start = k
            logical = lines[k]
            while logical.endswith("\\") and k + 1 < len(lines):
                k += 1
                logical += "\n" + lines[k]
            following = lines[k + 1] if k + 1 < len(lines) else ""
            text = logical.replace("localhost:3000", f"localhost:{port}")
            text = text.replace("cargo run -q --", shlex.quote(binary))
            out.append(text)
            if re.search(r"\bcurl ", logical) and not logical.lstrip().startswith("#"):
                lineno = first + start
                out.append(f"__expect {expected(logical, following)} {lineno}")
                out.append(f"printf '\\n  ↑ README.md:%s\\n' {lineno}")
            k += 1
    return "\n".join(out) + "\n"


def main():
    binary = os.path.abspath(sys.argv[1])
    readme = open(os.path.join(os.path.dirname(__file__), "..", "README.md"), encoding="utf-8").read()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as work:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GATEHOUSE_")}
        env.update(GATEHOUSE_LISTEN=f"127.0.0.1:{port}", RUST_LOG="warn")
        log = open(os.path.join(work, "server.log"), "w+")
        server = subprocess.Popen([binary], cwd=work, env=env, stdout=log, stderr=log)
        try:
            for _ in range(100):
                log.seek(0)
                if "listening on" in log.read():
                    break
                if server.poll() is not None:
                    break
                time.sleep(0.1)
            else:
                sys.exit("gatehouse did not start")
            if server.poll() is not None:
                log.seek(0)
                sys.exit("gatehouse did not start:\n" + log.read())
            path = os.path.join(work, "walkthrough.sh")
            with open(path, "w") as f:
                f.write(script(readme, binary, port))
            done = subprocess.run(["bash", path], cwd=work, env=env)
            if done.returncode != 0:
                log.seek(0)
                print("--- server log ---\n" + log.read(), file=sys.stderr)
                sys.exit(f"README walkthrough failed (exit {done.returncode})")
            print("\nREADME walkthrough: every block ran")
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
