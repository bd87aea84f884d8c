# Sourced by the scripts that need Debian packages:
#   ensure_packages PKG...   installs those not installed yet (apt,
#                            idempotent; sudo when not root)
ensure_packages() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    local SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    echo "memopt: installing ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}
