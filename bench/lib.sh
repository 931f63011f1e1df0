# Helpers the bench scripts share (sourced: `. bench/lib.sh`).

# hard_link_view SRC REAL DEST NAMES: DEST/train/ gets NAMES hard links cycling over SRC/train's REAL files
# (DLIO's names, img_<i>_of_<REAL>.npz), named as a dataset of NAMES files. Every sample read still copies a real
# file, and every accelerator count gets enough steps without NAMES files' worth of memory or disk.
hard_link_view() {
  local src=$1 real=$2 dest=$3 names=$4 k
  rm -rf "$dest"
  mkdir -p "$dest/train"
  for ((k = 0; k < names; k++)); do
    ln "$src/train/$(printf "img_%0${#real}d_of_%d.npz" $((k % real)) "$real")" \
       "$dest/train/$(printf "img_%0${#names}d_of_%d.npz" "$k" "$names")"
  done
}
