"""The API checks every inventory endpoint must pass (NetBox style): each test class names its model, endpoint
and data; the checks are the same for all."""
from django.db import connection
from django.test.utils import CaptureQueriesContext

from twin.inventory.filtersets import FILTERSETS


class APIChecks:
    model = None
    endpoint = ""
    brief_fields = ("id", "url", "display", "name")

    def create_data(self, demo, n: int) -> dict:
        """A valid new object (``n`` makes names unique)."""
        raise NotImplementedError

    update_data: dict = {}
    invalid_data: dict = {}   # a partial update the API must refuse, naming the field

    def url(self, pk=None):
        return f"/api/inventory/{self.endpoint}/" + (f"{pk}/" if pk else "")

    def existing(self, demo):
        return self.model.objects.order_by("id").first()

    # --- reading ---------------------------------------------------------------------------------------------
    def test_list(self, anon, demo):
        response = anon.get(self.url(), {"limit": 5})
        assert response.status_code == 200
        assert response.data["count"] == self.model.objects.count()
        first = response.data["results"][0]
        assert {"id", "url", "display"} <= set(first) and first["url"].endswith(self.url(first["id"]))

    def test_retrieve(self, anon, demo):
        obj = self.existing(demo)
        response = anon.get(self.url(obj.id))
        assert response.status_code == 200 and response.data["id"] == obj.id

    def test_list_rows_equal_the_detail_view(self, anon, demo):
        rows = anon.get(self.url(), {"limit": 3, "ordering": "-id"}).data["results"]
        assert rows and all(anon.get(self.url(row["id"])).data == row for row in rows)

    def test_brief(self, anon, demo):
        response = anon.get(self.url(), {"brief": "1", "limit": 2})
        assert tuple(response.data["results"][0]) == self.brief_fields

    def test_query_count_does_not_grow_with_page_size(self, anon, demo):
        counts = []
        for limit in (2, 40):
            with CaptureQueriesContext(connection) as queries:
                assert anon.get(self.url(), {"limit": limit}).status_code == 200
            counts.append(len(queries))
        rows = self.model.objects.count()
        if rows < 2 or rows >= 40:
            assert counts[0] == counts[1], counts
        else:  # only the page of 40 ends the list: it is its own count, no COUNT query (twin/api/pagination.py)
            assert counts[1] < counts[0], counts

    def test_cursor_pages_walk_every_row_once(self, anon, demo):
        seen, url = [], self.url() + "?pagination=cursor&limit=7"
        while url:
            page = anon.get(url).data
            seen += [row["id"] for row in page["results"]]
            url = page["next"]
        assert seen == sorted(self.model.objects.values_list("id", flat=True))

    def test_every_field_has_a_filter(self):
        filters = FILTERSETS[self.model].base_filters
        for f in self.model._meta.concrete_fields:
            if f.get_internal_type() == "JSONField":
                continue
            wanted = {f"{f.name}_id", f.name} if f.is_relation else {f.name if f.name != "id" else "id"}
            if not f.is_relation and f.get_internal_type() == "DateTimeField":
                wanted = {f"{f.name}__gte", f"{f.name}__lte"}
            assert wanted <= set(filters), f"{self.model.__name__}.{f.name} has no filter"

    def test_filter_by_id_and_search(self, anon, demo):
        obj = self.existing(demo)
        assert [r["id"] for r in anon.get(self.url(), {"id": obj.id}).data["results"]] == [obj.id]
        label = getattr(obj, "name", None) or getattr(obj, "slug")
        assert obj.id in [r["id"] for r in anon.get(self.url(), {"q": label, "limit": 1000}).data["results"]]

    # --- writing ---------------------------------------------------------------------------------------------
    def test_writes_need_authentication_and_permission(self, anon, reader, demo):
        assert anon.post(self.url(), self.create_data(demo, 1), format="json").status_code == 401
        assert reader.post(self.url(), self.create_data(demo, 1), format="json").status_code == 403
        obj = self.existing(demo)
        assert reader.delete(self.url(obj.id)).status_code == 403
        assert self.model.objects.filter(id=obj.id).exists()

    def test_create_update_delete(self, writer, demo):
        response = writer.post(self.url(), self.create_data(demo, 1), format="json")
        assert response.status_code == 201, response.data
        pk = response.data["id"]
        response = writer.patch(self.url(pk), self.update_data, format="json")
        assert response.status_code == 200, response.data
        for key, value in self.update_data.items():
            assert response.data[key] == value
        assert writer.delete(self.url(pk)).status_code == 204
        assert not self.model.objects.filter(id=pk).exists()

    def test_bulk_create_update_delete(self, writer, demo):
        response = writer.post(self.url(), [self.create_data(demo, 1), self.create_data(demo, 2)], format="json")
        assert response.status_code == 201, response.data
        ids = [row["id"] for row in response.data]
        response = writer.patch(self.url(), [{"id": pk, **self.update_data} for pk in ids], format="json")
        assert response.status_code == 200, response.data
        assert writer.delete(self.url(), [{"id": pk} for pk in ids], format="json").status_code == 204
        assert not self.model.objects.filter(id__in=ids).exists()

    def test_bulk_create_is_all_or_nothing(self, writer, demo):
        before = self.model.objects.count()
        bad = {**self.create_data(demo, 2), **self.invalid_data}
        response = writer.post(self.url(), [self.create_data(demo, 1), bad], format="json")
        assert response.status_code == 400
        assert set(self.invalid_data) & set(response.data[1])  # the error names the field, at its position
        assert self.model.objects.count() == before

    def test_bulk_update_is_all_or_nothing(self, writer, demo):
        ids = [writer.post(self.url(), self.create_data(demo, n), format="json").data["id"] for n in (1, 2)]
        before = [writer.get(self.url(pk)).data for pk in ids]
        response = writer.patch(self.url(), [{"id": ids[0], **self.update_data},
                                             {"id": ids[1], **self.invalid_data}], format="json")
        assert response.status_code == 400 and set(self.invalid_data) <= set(response.data[1])
        assert [writer.get(self.url(pk)).data for pk in ids] == before

    def test_bad_input_is_a_4xx_naming_the_field(self, writer, demo):
        obj = self.existing(demo)
        response = writer.patch(self.url(obj.id), self.invalid_data, format="json")
        assert response.status_code == 400 and set(self.invalid_data) <= set(response.data)
        assert writer.post(self.url(), {}, format="json").status_code == 400
        assert writer.post(self.url(), "not json", content_type="application/json").status_code == 400
        assert writer.delete(self.url(), [{"id": 10**9}], format="json").status_code == 400

