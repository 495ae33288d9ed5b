"""Drives the server with the Python client (Debian's python3-kubernetes): typed APIs compiled against
upstream's group names, and its leader election. Prints one JSON line of results for the test."""
import json
import sys
import threading

from kubernetes import client, config
from kubernetes.leaderelection import electionconfig, leaderelection
from kubernetes.leaderelection.resourcelock.configmaplock import ConfigMapLock

config.load_kube_config(sys.argv[1])
out = {}


def step(name, fn):
    try:
        out[name] = fn()
    except client.exceptions.ApiException as e:  # the server's Status, as the client reports it
        out[name] = {"error": e.reason, "status": e.status, "body": (e.body or "")[:300]}
    except Exception as e:  # noqa: BLE001 - anything else is a failed step, reported as such
        out[name] = {"error": repr(e)[:300]}


storage = client.StorageV1Api()
step("create_csi_driver", lambda: storage.create_csi_driver(client.V1CSIDriver(
    metadata=client.V1ObjectMeta(name="py.example.com"),
    spec=client.V1CSIDriverSpec(attach_required=True, volume_lifecycle_modes=["Persistent"]))).metadata.name)
step("read_csi_driver", lambda: [storage.read_csi_driver("py.example.com").spec.attach_required])
step("list_csi_driver", lambda: [d.metadata.name for d in storage.list_csi_driver().items])
step("patch_csi_driver", lambda: storage.patch_csi_driver("py.example.com", {"metadata": {"labels": {"by": "python"}}}).metadata.labels)
step("delete_csi_driver", lambda: storage.delete_csi_driver("py.example.com").metadata.name)

coordination = client.CoordinationV1Api()
step("create_lease", lambda: coordination.create_namespaced_lease("default", client.V1Lease(
    metadata=client.V1ObjectMeta(name="py-lease"),
    spec=client.V1LeaseSpec(holder_identity="python", lease_duration_seconds=15))).spec.holder_identity)
step("list_lease", lambda: [item.metadata.name for item in coordination.list_namespaced_lease("default").items])

rbac = client.RbacAuthorizationV1Api()
step("create_cluster_role", lambda: rbac.create_cluster_role(client.V1ClusterRole(
    metadata=client.V1ObjectMeta(name="py-reader"),
    rules=[client.V1PolicyRule(api_groups=["storage.k8s.io"], resources=["csidrivers"], verbs=["get"])])).metadata.name)
step("read_cluster_role", lambda: [r.api_groups for r in rbac.read_cluster_role("py-reader").rules])
step("create_cluster_role_binding", lambda: rbac.create_cluster_role_binding(client.V1ClusterRoleBinding(
    metadata=client.V1ObjectMeta(name="py-reader"),
    role_ref=client.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="ClusterRole", name="py-reader"),
    subjects=[(getattr(client, "RbacV1Subject", None) or client.V1Subject)(kind="User", name="py-user", api_group="rbac.authorization.k8s.io")])).role_ref.api_group)


def elect():
    """Leader election with the client's ConfigMap lock: this candidate becomes leader."""
    became = threading.Event()
    lock = ConfigMapLock("py-election", "default", "python-candidate")
    cfg = electionconfig.Config(lock, lease_duration=6, renew_deadline=4, retry_period=1,
                                onstarted_leading=became.set, onstopped_leading=lambda: None)
    thread = threading.Thread(target=leaderelection.LeaderElection(cfg).run, daemon=True)
    thread.start()
    if not became.wait(20):
        return {"error": "did not become leader"}
    cm = client.CoreV1Api().read_namespaced_config_map("py-election", "default")
    record = json.loads(cm.metadata.annotations["control-plane.alpha.kubernetes.io/leader"])
    return record["holderIdentity"]


step("leader_election", elect)
print(json.dumps(out))
