"""Tokens made before hashing (Django REST framework's authtoken table, plain text) become hashed ApiToken rows,
and the plain table is dropped: the same tokens keep working, and the database holds none of them."""
import datetime
import hashlib

from django.db import migrations
from django.utils import timezone

LEGACY_TABLE = "authtoken_token"
KEY_LENGTH = 12     # twin.api.models.TOKEN_KEY_LENGTH when this migration was written


def hash_plain_tokens(apps, schema_editor):
    connection = schema_editor.connection
    if LEGACY_TABLE not in connection.introspection.table_names():
        return
    ApiToken = apps.get_model("api", "ApiToken")
    q = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {q('key')}, {q('user_id')}, {q('created')} FROM {q(LEGACY_TABLE)}")
        rows = cursor.fetchall()
    for key, user_id, created in rows:
        token = ApiToken.objects.create(user_id=user_id, key=key[:KEY_LENGTH],
                                        digest=hashlib.sha256(key.encode()).hexdigest(),
                                        description="made before tokens were hashed")
        if isinstance(created, str):
            created = datetime.datetime.fromisoformat(created)
        if timezone.is_naive(created):
            created = timezone.make_aware(created, datetime.timezone.utc)
        ApiToken.objects.filter(pk=token.pk).update(created=created)
    schema_editor.execute(f"DROP TABLE {q(LEGACY_TABLE)}")


class Migration(migrations.Migration):
    dependencies = [("api", "0001_api_token")]
    operations = [migrations.RunPython(hash_plain_tokens, migrations.RunPython.noop, elidable=True)]
