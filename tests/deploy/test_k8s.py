"""The Kubernetes manifest, checked offline: every object against the Kubernetes API schema
(strict: an unknown or misspelt field fails), and against the image and the server it runs."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from speakstream.config import ENV_PREFIX, ServerConfig

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "deploy" / "k8s" / "speakstream.yaml"
KUBERNETES = ("1.30.0", "1.37.0")  # the oldest release still supported by the big clouds, the newest


def objects() -> dict[str, dict[str, Any]]:
    return {doc["kind"]: doc for doc in yaml.safe_load_all(MANIFEST.read_text()) if doc}


def container() -> dict[str, Any]:
    spec: dict[str, Any] = objects()["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    return spec


def env() -> dict[str, Any]:
    return {e["name"]: e.get("value") for e in container()["env"]}


@pytest.mark.parametrize("version", KUBERNETES)
def test_every_object_is_valid_kubernetes(version: str) -> None:
    found = objects()
    assert set(found) == {"Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget"}
    for doc in found.values():
        kubernetes_validate.validate(doc, version, strict=True)  # raises on any schema error


def test_a_misspelt_field_would_be_caught() -> None:
    broken = objects()["Deployment"]
    broken["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}  # sic
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES[-1], strict=True)


def test_the_probes_ask_the_engine_on_the_image_port() -> None:
    c = container()
    port = next(p for p in c["ports"] if p["name"] == "http")
    exposed = re.search(r"^EXPOSE (\d+)", (ROOT / "Dockerfile").read_text(), re.MULTILINE)
    assert exposed is not None and port["containerPort"] == int(exposed.group(1)) == ServerConfig().port
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert c[probe]["httpGet"] == {"path": "/ping", "port": "http"}  # 503 until the engine is warm
    assert c["args"] == ["serve"]  # the SageMaker-style entrypoint


def test_termination_outlasts_the_drain() -> None:
    spec = objects()["Deployment"]["spec"]["template"]["spec"]
    pre_stop = int(container()["lifecycle"]["preStop"]["exec"]["command"][1])
    drain = float(env()["SPEAKSTREAM_GRACE_S"])
    assert spec["terminationGracePeriodSeconds"] >= pre_stop + drain + 10


def test_the_pod_runs_as_the_image_user() -> None:
    uid = re.search(r"useradd .*--uid (\d+)", (ROOT / "Dockerfile").read_text())
    assert uid is not None
    pod = objects()["Deployment"]["spec"]["template"]["spec"]["securityContext"]
    assert pod["runAsNonRoot"] and pod["runAsUser"] == int(uid.group(1))


def test_the_settings_are_real_server_settings() -> None:
    fields = {f.name for f in dataclasses.fields(ServerConfig)}
    for name in env():
        assert name.startswith(ENV_PREFIX) and name.removeprefix(ENV_PREFIX).lower() in fields, name
    values = {k.removeprefix(ENV_PREFIX).lower(): v for k, v in env().items() if v is not None}
    ServerConfig.from_env({f"{ENV_PREFIX}{k.upper()}": v for k, v in values.items()})  # they parse


def test_service_and_autoscaler_point_at_the_deployment() -> None:
    found = objects()
    labels = found["Deployment"]["spec"]["template"]["metadata"]["labels"]
    assert found["Service"]["spec"]["selector"].items() <= labels.items()
    assert found["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"].items() <= labels.items()
    target = found["HorizontalPodAutoscaler"]["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", found["Deployment"]["metadata"]["name"])
    assert found["Service"]["spec"]["ports"][0]["targetPort"] == "http"


def test_the_data_folder_the_image_declares_is_a_mounted_volume() -> None:
    """A read-only root: what the server keeps goes to the image's data folder, which the pod mounts."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    declared = re.search(r"SPEAKSTREAM_DATA_DIR=(\S+)", dockerfile)
    assert declared is not None and f"VOLUME {declared.group(1)}" in dockerfile
    mounts = {m["mountPath"]: m["name"] for m in container()["volumeMounts"]}
    volumes = {v["name"] for v in objects()["Deployment"]["spec"]["template"]["spec"]["volumes"]}
    assert mounts[declared.group(1)] in volumes and mounts["/tmp"] in volumes
    assert container()["securityContext"]["readOnlyRootFilesystem"] is True
    assert env()["SPEAKSTREAM_DATA_REQUIRED"] == "true"  # a volume that cannot be written stops the pod, loudly
