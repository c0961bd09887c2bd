"""Zooming at scale, in a real browser on demo-256: the GPU page's zone overview (one square per rack, as a
590k-GPU cluster opens) zooms into a zone on a click, down to single GPUs fed by a zone-scoped live stream; the fabric
page's zone table zooms into a zone, down to its heatmaps and racks."""
from tests.e2e.test_live import wait_live

ZONE = "demo-256.z01"


def test_the_overviews_zoom_into_a_zone(visitor):
    # given the GPU page's zone overview of demo-256
    page = visitor.visit("/clusters/demo-256/gpus/?view=zones", shot="gpus-demo-256-zones")
    wait_live(page)
    assert page.get_attribute("#gpu-grid", "data-cells") == "16"          # one square per rack
    # when the user clicks a rack of zone z01
    zones = page.evaluate("window.twin.gpuOverview.zones()")
    rack = page.evaluate("""(z) => fetch(document.getElementById("gpu-grid").dataset.zonesUrl).then((r) => r.json())
                              .then((d) => d.racks.zone.indexOf(z))""", zones.index(ZONE))
    centre = page.evaluate("(k) => window.twin.gpuOverview.rackCenter(k)", rack)
    visitor.follow(lambda: page.click("#gpu-grid", position=centre))
    visitor.wait_ready()
    # then the page shows that zone's GPUs alone, one cell each, fed by the zone's live stream
    assert f"zone={ZONE}" in page.url
    assert page.get_attribute("#gpu-grid", "data-cells") == "128"
    assert page.get_attribute("#gpu-grid", "data-view") == "zone"
    wait_live(page)
    assert page.evaluate("window.twin.gpuGrid.cellCenter(0)") is not None
    visitor.probe.assert_clean()

    # given the fabric page's zone overview, when the user clicks zone z01 there
    page = visitor.visit("/clusters/demo-256/fabric/?view=zones", shot="fabric-demo-256-zones")
    visitor.follow(lambda: page.click(f'#zone-table tr[data-zone="{ZONE}"] a'))
    visitor.wait_ready()
    # then the fabric page shows the zone's links (heatmaps) and its racks, at once
    assert page.locator("#heatmaps canvas.heatmap").count() >= 2
    assert not page.locator("#zone-detail").is_hidden()
    wait_live(page)
