"""Routes of the runs API, under /api/runs/, the calibration profiles', /api/calibrations/, and the clusters' builds
and deletes, /api/clusters/."""
from twin.runs.api.clusters import ClusterViewSet
from twin.runs.api.views import CalibrationViewSet, JobViewSet, RunViewSet, ScenarioViewSet, ScheduleViewSet


def register(router):
    router.register("runs/scenarios", ScenarioViewSet, basename="scenario")
    router.register("runs/jobs", JobViewSet, basename="job")
    router.register("runs/schedules", ScheduleViewSet, basename="schedule")
    router.register("calibrations", CalibrationViewSet, basename="calibration")
    router.register("clusters", ClusterViewSet, basename="cluster-runs")
    router.register("runs", RunViewSet, basename="simulationrun")  # after the others: /runs/<id>/
