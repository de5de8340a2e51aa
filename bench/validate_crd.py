"""What a scripting user does today: validate a TFJob manifest against the upstream CRD's
openAPIV3Schema with Python's jsonschema, in a fresh process. The YAML is parsed with PyYAML's
C loader (libyaml), so the baseline is not slowed by the pure-Python parser.

usage: validate_crd.py CRD.yaml MANIFEST.yaml
"""
import sys

import jsonschema
import yaml

crd_path, manifest_path = sys.argv[1], sys.argv[2]
with open(crd_path) as f:
    crd = yaml.load(f, Loader=yaml.CSafeLoader)
schema = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")["schema"]["openAPIV3Schema"]
with open(manifest_path) as f:
    docs = [d for d in yaml.load_all(f, Loader=yaml.CSafeLoader) if d]
errors = [e for d in docs for e in jsonschema.Draft7Validator(schema).iter_errors(d)]
for e in errors:
    print(f"{'/'.join(map(str, e.absolute_path))}: {e.message}")
sys.exit(1 if errors else 0)
