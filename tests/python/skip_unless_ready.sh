# Sourced by the Python suites' scripts: `skip_unless_ready BUILD PYTHON
# MODULE...` exits 77 (ctest: skipped), saying why, when the interpreter
# cannot import the modules or the extension hvd._core was not built.
skip_unless_ready() {
  local build=$1 python=$2
  shift 2
  local modules
  modules=$(IFS=,; echo "$*")
  if ! "$python" -c "import $modules" 2>/dev/null; then
    echo "skipped: $python cannot import $* (install python3-torch" \
         "python3-pytest python3-numpy python3-cloudpickle)"
    exit 77
  fi
  if ! compgen -G "$build/python/hvd/_core*.so" >/dev/null; then
    echo "skipped: the extension hvd._core was not built (install" \
         "python3-dev and pybind11-dev, then re-run cmake)"
    exit 77
  fi
}
