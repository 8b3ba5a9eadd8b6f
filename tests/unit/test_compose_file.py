from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

COMPOSE = Path(__file__).resolve().parents[2] / "docker" / "compose.yaml"


def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    return data


def test_engines_bind_to_loopback_on_the_documented_ports() -> None:
    services = compose()["services"]
    assert services["opensearch"]["ports"] == ["127.0.0.1:9200:9200"]
    assert services["elasticsearch"]["ports"] == ["127.0.0.1:9201:9200"]


def test_every_engine_has_a_health_check() -> None:
    for name, service in compose()["services"].items():
        check = service["healthcheck"]["test"]
        assert "_cluster/health" in " ".join(check), name


def test_opensearch_uses_the_official_image_with_security_off_for_development_only() -> None:
    service = compose()["services"]["opensearch"]
    assert service["image"].startswith("opensearchproject/opensearch:")
    assert service["environment"]["DISABLE_SECURITY_PLUGIN"] == "true"
    assert "LOCAL DEVELOPMENT ONLY" in COMPOSE.read_text(encoding="utf-8")


def test_elasticsearch_keeps_security_on() -> None:
    environment = compose()["services"]["elasticsearch"]["environment"]
    assert environment["xpack.security.enabled"] == "true"
    assert environment["ELASTIC_PASSWORD"]


def _compose_cli() -> list[str] | None:
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0:
        return [docker, "compose"]
    legacy = shutil.which("docker-compose")
    return [legacy] if legacy else None


def test_docker_compose_accepts_the_file() -> None:
    cli = _compose_cli()
    if cli is None:
        pytest.skip("no docker compose CLI on this machine")
    result = subprocess.run([*cli, "-f", str(COMPOSE), "config", "--quiet"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
