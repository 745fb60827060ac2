"""Authority is derived (docs/access.md): who approved a grant, who disabled a hook, and each
agent's count of the tasks it holds for a person or a manager (claimed, not finished), kept by a
trigger on agent_tasks (the broker reads the work an agent holds only when it is not 0)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


HELD_TASKS = """
CREATE OR REPLACE FUNCTION brainframe_task_held(v_task uuid, v_o_tag uuid) RETURNS boolean AS $$
    SELECT EXISTS (SELECT 1 FROM origin_registry o WHERE o.id = v_o_tag AND o.principal IS NOT NULL)
        OR EXISTS (SELECT 1 FROM delegations d WHERE d.task_id = v_task);
$$ LANGUAGE sql STABLE;
CREATE OR REPLACE FUNCTION brainframe_held_tasks() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.status = NEW.status AND OLD.agent_id = NEW.agent_id THEN
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.status = 'in_progress'
       AND brainframe_task_held(OLD.task_id, OLD.o_tag) THEN
        UPDATE agents SET held_tasks = greatest(held_tasks - 1, 0) WHERE agent_id = OLD.agent_id;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.status = 'in_progress'
       AND brainframe_task_held(NEW.task_id, NEW.o_tag) THEN
        UPDATE agents SET held_tasks = held_tasks + 1 WHERE agent_id = NEW.agent_id;
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER agent_tasks_held
    AFTER INSERT OR UPDATE OF status, agent_id OR DELETE ON agent_tasks
    FOR EACH ROW EXECUTE FUNCTION brainframe_held_tasks();
UPDATE agents a SET held_tasks = (
    SELECT count(*) FROM agent_tasks t
     WHERE t.agent_id = a.agent_id AND t.status = 'in_progress'
       AND brainframe_task_held(t.task_id, t.o_tag)
);
"""
UNDO = """
DROP TRIGGER IF EXISTS agent_tasks_held ON agent_tasks;
DROP FUNCTION IF EXISTS brainframe_held_tasks();
DROP FUNCTION IF EXISTS brainframe_task_held(uuid, uuid);
"""


class Migration(migrations.Migration):

    dependencies = [
        ('brainframe', '0038_token_generation'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='agent',
            name='held_tasks',
            field=models.PositiveIntegerField(default=0, editable=False),
        ),
        migrations.RunSQL(HELD_TASKS, UNDO),
        migrations.AlterModelOptions(
            name='capabilitygrant',
            options={'ordering': ['-created_at'], 'permissions': [('approve_person_grant', 'May approve a grant for any person (beyond the owners their ACL policy names)')]},
        ),
        migrations.AddField(
            model_name='capabilitygrant',
            name='approved_by',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='grants_approved', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddField(
            model_name='hook',
            name='disabled_by',
            field=models.CharField(blank=True, max_length=160),
        ),
        # Hooks disabled before: who did it, from the reason it was kept with.
        migrations.RunSQL(
            """
            UPDATE hooks SET disabled_by = CASE
                WHEN disabled_reason LIKE 'by agent:%%' THEN split_part(substr(disabled_reason, 4), ':', 1) || ':' || split_part(split_part(substr(disabled_reason, 4), ':', 2), ' ', 1)
                WHEN disabled_reason LIKE 'disabled after %%' THEN 'system'
                ELSE 'staff:' || split_part(substr(disabled_reason, 4), ':', 1)
            END
            WHERE status = 'disabled'
            """,
            migrations.RunSQL.noop,
        ),
        migrations.AlterField(
            model_name='capabilitygrant',
            name='until',
            field=models.DateTimeField(blank=True, help_text='When it ends (every grant made now has an end).', null=True),
        ),
    ]
