"""Calibration profiles in the admin (twin/runs/admin.py): values refused as the API refuses them (each parameter's own
declaration), a saved profile and a deleted one in the change log as through the API, and another user's profile
read-only to a staff user without runs.manage_any_calibration. Django's test client. Given / when / then."""
from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Permission, User

from twin.inventory.models import Cluster, ObjectChange
from twin.runs.models import CalibrationProfile

ADD = "/admin/runs/calibrationprofile/add/"


@pytest.fixture
def cluster(db):
    return Cluster.objects.create(name="admin-calib", title="a cluster", spec={})


def _form(cluster, values, name="fitted"):
    return {"cluster": cluster.pk, "name": name, "values": json.dumps(values), "intervals": "{}", "summary": "{}",
            "notes": "", "created_by": ""}


def test_the_admin_refuses_bad_values_and_logs_what_it_saves_and_deletes(client, cluster):
    admin = User.objects.create_superuser("calib-admin")
    client.force_login(admin)
    # when a value out of its parameter's range is saved: the form says why, nothing is saved
    r = client.post(ADD, _form(cluster, {"gemm_efficiency": 2.0}))
    assert r.status_code == 200 and "gemm_efficiency: must be at most 1" in r.content.decode()
    assert not CalibrationProfile.objects.exists()
    # when a good profile is saved: it is, the admin's, logged as created
    r = client.post(ADD, _form(cluster, {"gemm_efficiency": 0.6}))
    assert r.status_code == 302, r.content.decode()[:2000]
    profile = CalibrationProfile.objects.get()
    assert profile.values == {"gemm_efficiency": 0.6} and profile.created_by == admin
    change = ObjectChange.objects.get(model="calibrationprofile", action="create")
    assert change.user == admin and change.after["values"] == {"gemm_efficiency": 0.6}
    # when it is edited and then deleted: both logged
    r = client.post(f"/admin/runs/calibrationprofile/{profile.pk}/change/", _form(cluster, {"gemm_efficiency": 0.7}))
    assert r.status_code == 302
    update = ObjectChange.objects.get(model="calibrationprofile", action="update")
    assert (update.before, update.after) == ({"values": {"gemm_efficiency": 0.6}}, {"values": {"gemm_efficiency": 0.7}})
    r = client.post(f"/admin/runs/calibrationprofile/{profile.pk}/delete/", {"post": "yes"})
    assert r.status_code == 302 and not CalibrationProfile.objects.exists()
    assert ObjectChange.objects.filter(model="calibrationprofile", action="delete", object_id=profile.pk).exists()


def test_another_users_profile_is_read_only_in_the_admin(client, cluster):
    # given alice's profile and bob, staff with every model permission of runs but not manage_any_calibration
    alice = User.objects.create_user("alice-admin-calib")
    profile = CalibrationProfile.objects.create(cluster=cluster, name="hers", values={"gemm_efficiency": 0.6},
                                                created_by=alice)
    bob = User.objects.create_user("bob-admin-calib", is_staff=True)
    bob.user_permissions.add(*Permission.objects.filter(content_type__app_label="runs")
                             .exclude(codename="manage_any_calibration"))
    client.force_login(bob)
    # when bob posts a change or a deletion: refused, the profile unchanged
    r = client.post(f"/admin/runs/calibrationprofile/{profile.pk}/change/", _form(cluster, {"gemm_efficiency": 0.9},
                                                                               name="hers"))
    assert r.status_code == 403
    assert client.post(f"/admin/runs/calibrationprofile/{profile.pk}/delete/", {"post": "yes"}).status_code == 403
    profile.refresh_from_db()
    assert profile.values == {"gemm_efficiency": 0.6}
