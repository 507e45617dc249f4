"""run_vectors.py FILE runs verify.py over the vectors the Go test writes
(examples/vectors_test.go) and prints, as JSON, what it decided for each:
"ok" or the kind of VerifyError."""
import base64
import json
import sys

from verify import VerifyError, verify

results = []
with open(sys.argv[1], encoding="utf-8") as f:
    vectors = json.load(f)
for v in vectors:
    try:
        # Headers as a dict of lists: every value of each, in order.
        verify(base64.b64decode(v["body"]), v["headers"], v["secrets"], tolerance=v["tolerance"], now=v["now"])
        got = "ok"
    except VerifyError as e:
        got = e.kind
    except Exception as e:  # a crash is a disagreement to report, not the end of the run
        got = "raised %r" % e
    results.append({"name": v["name"], "got": got})
print(json.dumps(results))
