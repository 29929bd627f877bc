"""Checks what building needs, from `cargo metadata`: fails when a locked dependency needs a
newer Rust than the workspace's `rust-version` (which README names), or when OpenSSL crept
back into the dependency tree (TLS is rustls: the Rust toolchain and a C compiler suffice)."""
import json
import subprocess
import sys

meta = json.loads(
    subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--locked"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
)


def version(v):
    parts = [int(x) for x in v.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


members = set(meta["workspace_members"])
resolved = {n["id"] for n in meta["resolve"]["nodes"]}
ours = {version(p["rust_version"]) for p in meta["packages"] if p["id"] in members}
if len(ours) != 1:
    sys.exit(f"workspace crates disagree on rust-version: {sorted(ours)}")
ours = ours.pop()
too_new = sorted(
    (version(p["rust_version"]), p["name"], p["version"])
    for p in meta["packages"]
    if p["id"] in resolved and p["id"] not in members and p.get("rust_version")
    and version(p["rust_version"]) > ours
)
if too_new:
    need, name, ver = too_new[-1]
    sys.exit(
        f"rust-version {'.'.join(map(str, ours[:2]))} is too old: {name} {ver} needs "
        f"{'.'.join(map(str, need))} (raise it in Cargo.toml and README)"
    )
native = sorted(
    p["name"]
    for p in meta["packages"]
    if p["id"] in resolved and p["name"] in ("openssl-sys", "native-tls", "openssl")
)
if native:
    sys.exit(f"OpenSSL is back in the dependency tree ({', '.join(native)}): use rustls")
readme = open("README.md", encoding="utf-8").read()
stated = f"Rust {'.'.join(map(str, ours[:2]))}"
if stated not in readme:
    sys.exit(f"README does not name the minimum ({stated!r})")
print(f"rust-version {'.'.join(map(str, ours[:2]))} covers every locked dependency")
