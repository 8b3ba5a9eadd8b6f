from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

COMPOSE = Path(__file__).resolve().parents[2] / "docker" / "compose.yaml"
DOCKERFILE = COMPOSE.parent / "sidecar.Dockerfile"
ENGINES = ("opensearch", "elasticsearch")


def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    return data


def test_engines_bind_to_loopback_on_the_documented_ports() -> None:
    services = compose()["services"]
    assert services["opensearch"]["ports"] == ["127.0.0.1:9200:9200"]
    assert services["elasticsearch"]["ports"] == ["127.0.0.1:9201:9200"]


def test_every_engine_has_a_health_check() -> None:
    for name in ENGINES:
        check = compose()["services"][name]["healthcheck"]["test"]
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


def test_the_sidecar_runs_beside_the_engines_published_on_loopback_only() -> None:
    sidecar = compose()["services"]["sidecar"]
    assert sidecar["profiles"] == ["sidecar"]  # `up` alone still starts only the engines
    assert sidecar["ports"] == ["127.0.0.1:8088:8088"]
    assert sidecar["build"]["dockerfile"] == "docker/sidecar.Dockerfile"
    assert (COMPOSE.parent / sidecar["build"]["context"] / sidecar["build"]["dockerfile"]).is_file()
    assert sidecar["environment"]["ESBRIDGE_URL"] == "http://opensearch:9200"
    assert sidecar["depends_on"]["opensearch"]["condition"] == "service_healthy"
    assert "/readyz" in " ".join(sidecar["healthcheck"]["test"])
    command = sidecar["command"]
    # 0.0.0.0 inside the container is intended: the published port is on loopback only.
    assert command[command.index("--host") + 1] == "0.0.0.0"  # noqa: S104


def test_the_sidecar_image_runs_as_a_non_root_user_and_installs_the_service_extra() -> None:
    lines = [line.strip() for line in DOCKERFILE.read_text(encoding="utf-8").splitlines()]
    users = [line.split()[1] for line in lines if line.startswith("USER ")]
    assert users and users[-1] not in ("root", "0")
    assert any(line.startswith("RUN pip install") and "[service" in line for line in lines)
    assert lines.index(f"USER {users[-1]}") < lines.index('ENTRYPOINT ["esbridge"]')
    assert any(line.startswith("HEALTHCHECK") for line in lines)


def test_the_image_and_compose_need_a_key_for_reads_as_they_listen_beyond_loopback() -> None:
    from esbridge.config.service import ServiceSettings
    from esbridge.errors import ConfigError
    from esbridge.service.auth import KeyRing

    cmd = next(line for line in DOCKERFILE.read_text(encoding="utf-8").splitlines() if line.startswith("CMD "))
    command = yaml.safe_load(cmd.removeprefix("CMD "))
    for args in (command, compose()["services"]["sidecar"]["command"]):
        service = ServiceSettings(host=args[args.index("--host") + 1])
        assert service.reads_need_key
        with pytest.raises(ConfigError, match="need a key"):
            KeyRing.from_settings(service)  # no key configured: it refuses to start rather than serve reads openly
    assert "ESBRIDGE_API_KEYS" in compose()["services"]["sidecar"]["environment"]


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


def test_the_image_fetches_the_default_embedding_model_at_build_time() -> None:
    from esbridge.config.embedding import EmbeddingSettings

    default = EmbeddingSettings()
    fetched = re.search(r"locate_onnx\('([^']+)', '([^']+)'\)", DOCKERFILE.read_text(encoding="utf-8"))
    assert fetched is not None, "the Dockerfile no longer fetches a model at build time"
    assert (fetched.group(1), fetched.group(2)) == (default.model, default.precision)
    assert default.backend == "onnx"
