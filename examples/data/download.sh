#!/bin/sh
# Downloads the research data darkbert reads into the per-user data cache, laid out like ../shared/data:
#   glue/{MRPC,STS-B,SST-2,QQP,RTE,QNLI,MNLI}/   official GLUE files (MRPC split as GLUE's download_glue_data.py does)
#   framenet/fndata-1.7/                          FrameNet 1.7 (frame/, lu/, ...) as distributed by NLTK
#   ud/en_ewt-ud-{train,dev,test}.conllu          UD English EWT
# Usage:  examples/data/download.sh [glue] [framenet] [ud]        (no argument = all three)
# Target: $DARKBERT_CACHE/data, else $XDG_CACHE_HOME/darkbert/data, else $HOME/.cache/darkbert/data,
#         the last place darkbert::DataRoot looks (include/darkbert/data/root.hpp). Needs curl and unzip.
# Licenses: GLUE tasks keep their own terms (MRPC: Microsoft research use); FrameNet CC BY 3.0;
#           UD English EWT CC BY-SA 4.0. Nothing here is run by the build or the tests.
set -eu

if [ -n "${DARKBERT_CACHE:-}" ]; then DEST="$DARKBERT_CACHE/data"
elif [ -n "${XDG_CACHE_HOME:-}" ]; then DEST="$XDG_CACHE_HOME/darkbert/data"
else DEST="$HOME/.cache/darkbert/data"; fi
GLUE=https://dl.fbaipublicfiles.com/glue/data
SENTEVAL=https://dl.fbaipublicfiles.com/senteval/senteval_data
FRAMENET=https://raw.githubusercontent.com/nltk/nltk_data/gh-pages/packages/corpora/framenet_v17.zip
UD=https://raw.githubusercontent.com/UniversalDependencies/UD_English-EWT/${UD_EWT_REF:-master}

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fetch() { echo "download $1"; curl -fL --retry 3 -o "$2" "$1"; }

glue() {
  mkdir -p "$DEST/glue"
  for zip in SST-2 STS-B QQP-clean QNLIv2 RTE MNLI; do
    fetch "$GLUE/$zip.zip" "$TMP/$zip.zip"
    unzip -q -o "$TMP/$zip.zip" -d "$TMP/glue"
  done
  for pair in SST-2:SST-2 STS-B:STS-B QQP-clean:QQP QQP:QQP QNLIv2:QNLI QNLI:QNLI RTE:RTE MNLI:MNLI; do
    from=${pair%%:*}; to=${pair##*:}
    if [ -d "$TMP/glue/$from" ]; then rm -rf "$DEST/glue/$to"; mv "$TMP/glue/$from" "$DEST/glue/$to"; fi
  done
  # MRPC: GLUE's split of the Microsoft file by the published dev ids (download_glue_data.py).
  fetch "$SENTEVAL/msr_paraphrase_train.txt" "$TMP/msr_train.txt"
  fetch "$GLUE/mrpc_dev_ids.tsv" "$TMP/dev_ids.tsv"
  mkdir -p "$DEST/glue/MRPC"
  cp "$TMP/dev_ids.tsv" "$DEST/glue/MRPC/dev_ids.tsv"
  awk -F'\t' -v train="$DEST/glue/MRPC/train.tsv" -v dev="$DEST/glue/MRPC/dev.tsv" '
    NR == FNR { sub(/\r$/, ""); ids[$1 "\t" $2] = 1; next }
    FNR == 1  { sub(/\r$/, ""); print > train; print > dev; next }
    { sub(/\r$/, ""); out = (($2 "\t" $3) in ids) ? dev : train
      print $1 "\t" $2 "\t" $3 "\t" $4 "\t" $5 > out }' "$TMP/dev_ids.tsv" "$TMP/msr_train.txt"
}

framenet() {
  fetch "$FRAMENET" "$TMP/framenet_v17.zip"
  unzip -q -o "$TMP/framenet_v17.zip" -d "$TMP/fn"
  mkdir -p "$DEST/framenet"
  rm -rf "$DEST/framenet/fndata-1.7"
  mv "$TMP/fn/framenet_v17" "$DEST/framenet/fndata-1.7"
}

ud() {
  mkdir -p "$DEST/ud"
  for split in train dev test; do fetch "$UD/en_ewt-ud-$split.conllu" "$DEST/ud/en_ewt-ud-$split.conllu"; done
  fetch "$UD/LICENSE.txt" "$DEST/ud/LICENSE.txt"
}

[ $# -eq 0 ] && set -- glue framenet ud
for what in "$@"; do
  case "$what" in
    glue|framenet|ud) "$what" ;;
    *) echo "usage: $0 [glue] [framenet] [ud]" >&2; exit 2 ;;
  esac
done
echo "done: $DEST"
