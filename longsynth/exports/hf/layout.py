"""What an hf export's folder holds: the Hugging Face split names, the record of the
export, and the patterns of the files it writes (and of their temporary names)."""
import re

SPLIT_NAMES = {"train": "train", "val": "validation", "test": "test"}  # longsynth -> Hugging Face
MARK = "longsynth.json"
_TEMP_RE = re.compile(r"^\.(README\.md|longsynth\.json|preview\.png"
                      r"|(train|validation|test)-\d{5}-of-\d{5}\.parquet)\.tmp$")
_OWN_RE = re.compile(r"^(README\.md|longsynth\.json|preview\.png"
                     r"|data/(train|validation|test)-\d{5}-of-\d{5}\.parquet)$")
