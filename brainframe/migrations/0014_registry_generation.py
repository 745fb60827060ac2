"""A generation token for the registry the broker caches (broker.registry).

Any statement that writes tools, validation policies, prime directives or constitution rules gives
the registry a new random token in the same transaction; a process uses its cached copy of the
registry only while the token it reads matches the one it loaded under."""

from django.db import migrations

TABLES = ("tools", "validation_policies", "prime_directives", "constitution_rules")

FORWARD = """
CREATE TABLE registry_generation (
    id smallint PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    token uuid NOT NULL
);
INSERT INTO registry_generation (id, token) VALUES (1, gen_random_uuid());

CREATE FUNCTION brainframe_registry_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO registry_generation (id, token) VALUES (1, gen_random_uuid())
    ON CONFLICT (id) DO UPDATE SET token = excluded.token;
    RETURN NULL;
END
$$;
""" + "".join(
    f"""
CREATE TRIGGER {table}_registry_changed
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON {table}
    FOR EACH STATEMENT EXECUTE FUNCTION brainframe_registry_changed();
"""
    for table in TABLES
)

BACKWARD = "".join(
    f"DROP TRIGGER IF EXISTS {table}_registry_changed ON {table};\n" for table in TABLES
) + """
DROP FUNCTION IF EXISTS brainframe_registry_changed();
DROP TABLE IF EXISTS registry_generation;
"""


class Migration(migrations.Migration):
    dependencies = [("brainframe", "0013_audit_fewer_indexes")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
