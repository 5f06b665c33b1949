# Sourced by the device scripts here: unbuffered Python, $OUT (the folder that comes back), the
# carried wheels (.carry/whl) installed to /tmp/site, and the source tree on PYTHONPATH.
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .carry/whl/*.whl \
  >"$OUT/pip.log" 2>&1
export PYTHONPATH=$PWD/src:/tmp/site
