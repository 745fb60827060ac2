"""Authority is derived (docs/access.md): who approved a grant, who disabled a hook, and each
agent's count of tasks in progress, kept by a trigger on agent_tasks (the broker reads the work
an agent holds only when it is not 0)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


TASKS_IN_PROGRESS = """
CREATE OR REPLACE FUNCTION brainframe_tasks_in_progress() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.status = NEW.status AND OLD.agent_id = NEW.agent_id THEN
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.status = 'in_progress' THEN
        UPDATE agents SET tasks_in_progress = greatest(tasks_in_progress - 1, 0)
         WHERE agent_id = OLD.agent_id;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.status = 'in_progress' THEN
        UPDATE agents SET tasks_in_progress = tasks_in_progress + 1 WHERE agent_id = NEW.agent_id;
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER agent_tasks_in_progress
    AFTER INSERT OR UPDATE OF status, agent_id OR DELETE ON agent_tasks
    FOR EACH ROW EXECUTE FUNCTION brainframe_tasks_in_progress();
UPDATE agents a SET tasks_in_progress = (
    SELECT count(*) FROM agent_tasks t WHERE t.agent_id = a.agent_id AND t.status = 'in_progress'
);
"""
UNDO = """
DROP TRIGGER IF EXISTS agent_tasks_in_progress ON agent_tasks;
DROP FUNCTION IF EXISTS brainframe_tasks_in_progress();
"""


class Migration(migrations.Migration):

    dependencies = [
        ('brainframe', '0038_token_generation'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='agent',
            name='tasks_in_progress',
            field=models.PositiveIntegerField(default=0, editable=False),
        ),
        migrations.RunSQL(TASKS_IN_PROGRESS, UNDO),
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
