# Sourced by the run-*-pair.sh scripts: `support_file NAME FILE...` prints the FILE whose name is
# NAME (the suite gives its support files as {file:NAME} arguments), or names the one missing
# and exits 2.
support_file() {
  wanted=$1
  shift
  for file in "$@"; do
    if [ "$(basename "$file")" = "$wanted" ]; then
      echo "$file"
      return 0
    fi
  done
  echo "$(basename "$0"): the support file $wanted was not given" >&2
  exit 2
}
