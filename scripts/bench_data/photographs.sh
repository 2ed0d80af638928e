# Sourced by the input-pipeline benchmarks: sets everything up, then PYTHON (the venv's) and IMAGES,
# a folder of COUNT (default 2,560) ImageNet-like JPEGs made once and cached under $CVTRAIN_HOME.
bash scripts/setup.sh > /dev/null
CVTRAIN_HOME=${CVTRAIN_HOME:-$HOME/.cache/cvtrain}
PYTHON="$CVTRAIN_HOME/venv/bin/python"
COUNT=${COUNT:-2560}
IMAGES="$CVTRAIN_HOME/bench_data/images_$COUNT"
"$PYTHON" scripts/bench_data/make_images.py "$IMAGES" --count "$COUNT"
