# Sourced by the CI scripts: a Python with the test tools (aiosmtpd, schemathesis), in a virtual
# environment under the cache folder, exported as TEST_PYTHON.
venv="${CI_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gatehouse}/venv"
if [ ! -x "$venv/bin/python" ]; then
    if ! python3 -m venv "$venv" 2>/dev/null; then
        # Debian/Ubuntu ship venv support separately.
        rm -rf "$venv"
        (apt-get install -y -qq python3-venv >/dev/null 2>&1 \
            || sudo apt-get install -y -qq python3-venv >/dev/null 2>&1) || true
        python3 -m venv "$venv"
    fi
fi
if ! "$venv/bin/python" -c 'import aiosmtpd' 2>/dev/null; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check aiosmtpd
fi
export TEST_PYTHON="$venv/bin/python"
