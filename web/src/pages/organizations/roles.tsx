// An organization's custom roles: a resource × action grid per role.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api, unwrap, type Schemas } from "../../api";
import { ErrorBox, Field, Submit } from "../../components/ui";
import { Perms, roleName, useCan } from "./hooks";
import { useT } from "../../i18n";

export function PermissionGrid(props: {
  resources: Schemas["PermissionCatalog"]["resources"];
  value: Perms;
  onChange: (v: Perms) => void;
}) {
  const t = useT();
  const toggle = (res: string, act: string, on: boolean) => {
    const set = new Set(props.value[res] ?? []);
    if (on) set.add(act);
    else set.delete(act);
    const next = { ...props.value, [res]: [...set].sort() };
    if (next[res]!.length === 0) delete next[res];
    props.onChange(next);
  };
  return (
    <fieldset>
      <legend>{t("Permissions")}</legend>
      {props.resources.map((r) => (
        <div key={r.resource} className="row">
          <strong>{r.resource}</strong>
          {r.actions.map((a) => (
            <label key={a} className="check">
              <input type="checkbox" name={`${r.resource}:${a}`} checked={props.value[r.resource]?.includes(a) ?? false} onChange={(e) => toggle(r.resource, a, e.target.checked)} />
              {a}
            </label>
          ))}
        </div>
      ))}
    </fieldset>
  );
}

function RoleEditor({ org, role, onDone }: { org: Schemas["FullOrganization"]; role: Schemas["OrganizationRole"] | null; onDone: () => void }) {
  const t = useT();
  const qc = useQueryClient();
  const catalog = useQuery({ queryKey: ["catalog"], queryFn: () => unwrap(api.GET("/organization/permission-catalog")), staleTime: Infinity });
  const [name, setName] = useState(role?.role ?? "");
  const [perms, setPerms] = useState<Perms>(role?.permission ?? {});
  const save = useMutation({
    mutationFn: () =>
      role
        ? unwrap(
            api.POST("/organization/update-role", {
              body: { organizationId: org.id, roleName: role.role, data: { permission: perms, roleName: name.trim() !== role.role ? name.trim() : null } },
            }),
          )
        : unwrap(api.POST("/organization/create-role", { body: { organizationId: org.id, role: name.trim(), permission: perms } })),
    onSuccess: () => {
      qc.invalidateQueries({ queryKey: ["roles", org.id] });
      onDone();
    },
  });
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        if (name.trim()) save.mutate();
      }}
    >
      <Field label="Role name" name="role-name" autoComplete="off" value={name} onChange={setName} />
      {catalog.data && <PermissionGrid resources={catalog.data.resources} value={perms} onChange={setPerms} />}
      <ErrorBox error={save.error ?? catalog.error} />
      <div className="row">
        <Submit pending={save.isPending} disabled={!name.trim()}>
          {role ? t("Save role") : t("Create role")}
        </Submit>
        <button type="button" className="secondary" onClick={onDone}>
          {t("Cancel")}
        </button>
      </div>
    </form>
  );
}

export function Roles({ org }: { org: Schemas["FullOrganization"] }) {
  const t = useT();
  const qc = useQueryClient();
  const canCreate = useCan(org.id, { ac: ["create"] });
  const canUpdate = useCan(org.id, { ac: ["update"] });
  const canDelete = useCan(org.id, { ac: ["delete"] });
  const catalog = useQuery({ queryKey: ["catalog"], queryFn: () => unwrap(api.GET("/organization/permission-catalog")), staleTime: Infinity });
  const custom = useQuery({
    queryKey: ["roles", org.id],
    queryFn: () => unwrap(api.GET("/organization/list-roles", { params: { query: { organizationId: org.id } } })),
    retry: false,
  });
  const [editing, setEditing] = useState<Schemas["OrganizationRole"] | "new" | null>(null);
  const remove = useMutation({
    mutationFn: (roleName: string) => unwrap(api.POST("/organization/delete-role", { body: { organizationId: org.id, roleName } })),
    onSuccess: () => qc.invalidateQueries({ queryKey: ["roles", org.id] }),
  });
  const show = (p: Perms) =>
    Object.entries(p)
      .map(([r, a]) => `${r}: ${a.join(", ")}`)
      .join(" · ") || t("nothing");
  return (
    <section className="card" aria-labelledby="roles-h">
      <h2 id="roles-h">{t("Roles")}</h2>
      <ul className="list">
        {(catalog.data?.roles ?? []).map((r) => (
          <li key={r.role}>
            <span>
              <strong>{roleName(r.role, t)}</strong> <span className="badge">{r.builtIn ? t("built-in") : t("configured")}</span>
              <div className="muted">{show(r.permission)}</div>
            </span>
          </li>
        ))}
        {(custom.data ?? []).map((r) => (
          <li key={r.id}>
            <span>
              <strong>{r.role}</strong> <span className="badge">{t("custom")}</span>
              <div className="muted">{show(r.permission)}</div>
            </span>
            <span className="row">
              {canUpdate && (
                <button type="button" className="secondary" onClick={() => setEditing(r)}>
                  {t("Edit")}
                </button>
              )}
              {canDelete && (
                <button type="button" className="secondary" disabled={remove.isPending} onClick={() => remove.mutate(r.role)}>
                  {t("Delete")}
                </button>
              )}
            </span>
          </li>
        ))}
      </ul>
      <ErrorBox error={remove.error ?? custom.error} />
      {editing ? (
        <RoleEditor key={editing === "new" ? "new" : editing.id} org={org} role={editing === "new" ? null : editing} onDone={() => setEditing(null)} />
      ) : (
        canCreate && (
          <p>
            <button type="button" onClick={() => setEditing("new")}>
              {t("New role")}
            </button>
          </p>
        )
      )}
    </section>
  );
}
