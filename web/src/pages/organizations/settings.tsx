// An organization's settings: rename, slug, delete.
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useNavigate } from "react-router";
import { api, unwrap, type Schemas } from "../../api";
import { Confirm, ErrorBox, Field, Notice, Submit } from "../../components/ui";
import { SESSION_KEY } from "../../session";
import { useCan } from "./hooks";
import { useT } from "../../i18n";

export function Settings({ org }: { org: Schemas["FullOrganization"] }) {
  const t = useT();
  const qc = useQueryClient();
  const navigate = useNavigate();
  const canUpdate = useCan(org.id, { organization: ["update"] });
  const canDelete = useCan(org.id, { organization: ["delete"] });
  const [name, setName] = useState(org.name);
  const [slug, setSlug] = useState(org.slug);
  const [logo, setLogo] = useState(org.logo ?? "");
  const [deleting, setDeleting] = useState(false);
  const update = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST("/organization/update", {
          body: { organizationId: org.id, data: { name: name.trim(), slug: slug !== org.slug ? slug : null, logo: logo.trim() || null } },
        }),
      ),
    onSuccess: () => {
      qc.invalidateQueries({ queryKey: ["org", org.id] });
      qc.invalidateQueries({ queryKey: ["orgs"] });
    },
  });
  const del = useMutation({
    mutationFn: () => unwrap(api.POST("/organization/delete", { body: { organizationId: org.id } })),
    onSuccess: async () => {
      await qc.invalidateQueries({ queryKey: ["orgs"] });
      await qc.invalidateQueries({ queryKey: SESSION_KEY });
      navigate("/organizations");
    },
  });
  return (
    <section className="card" aria-labelledby="settings-h">
      <h2 id="settings-h">{t("Settings")}</h2>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (name.trim()) update.mutate();
        }}
      >
        <Field label="Name" name="org-name" autoComplete="organization" value={name} onChange={setName} disabled={!canUpdate} />
        <Field label="Slug" name="org-slug" autoComplete="off" value={slug} onChange={setSlug} disabled={!canUpdate} />
        <Field label="Logo URL" name="org-logo" type="url" autoComplete="off" value={logo} onChange={setLogo} disabled={!canUpdate} />
        <ErrorBox error={update.error} />
        {update.isSuccess && <Notice>{t("Saved.")}</Notice>}
        {canUpdate && (
          <div>
            <Submit pending={update.isPending}>{t("Save")}</Submit>
          </div>
        )}
      </form>
      {canDelete && (
        <p>
          <button type="button" className="danger" onClick={() => setDeleting(true)}>
            {t("Delete organization…")}
          </button>
        </p>
      )}
      {deleting && (
        <Confirm
          title={t("Delete {name}?", { name: org.name })}
          body="Members, teams, roles and invitations are deleted with it. This cannot be undone."
          confirm="Delete organization"
          action={del}
          onClose={() => setDeleting(false)}
        />
      )}
    </section>
  );
}
