// An organization's teams: create, rename, delete, their members, the active team.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api, unwrap, type Schemas } from "../../api";
import { ErrorBox, Field, Submit } from "../../components/ui";
import { SESSION_KEY, useSession } from "../../session";
import { useCan } from "./hooks";
import { useT } from "../../i18n";

function TeamRow({ team, org }: { team: Schemas["TeamWithMemberCount"]; org: Schemas["FullOrganization"] }) {
  const t = useT();
  const qc = useQueryClient();
  const session = useSession();
  const canUpdate = useCan(org.id, { team: ["update"] });
  const canDelete = useCan(org.id, { team: ["delete"] });
  const [name, setName] = useState(team.name);
  const [open, setOpen] = useState(false);
  const [addUser, setAddUser] = useState("");
  const refresh = () => qc.invalidateQueries({ queryKey: ["org", org.id] });
  const members = useQuery({
    queryKey: ["team-members", team.id],
    queryFn: () => unwrap(api.GET("/organization/list-team-members", { params: { query: { teamId: team.id } } })),
    enabled: open,
    retry: false,
  });
  const rename = useMutation({
    mutationFn: () => unwrap(api.POST("/organization/update-team", { body: { organizationId: org.id, teamId: team.id, data: { name: name.trim() } } })),
    onSuccess: refresh,
  });
  const remove = useMutation({
    mutationFn: () => unwrap(api.POST("/organization/remove-team", { body: { organizationId: org.id, teamId: team.id } })),
    onSuccess: refresh,
  });
  const add = useMutation({
    mutationFn: () => unwrap(api.POST("/organization/add-team-member", { body: { organizationId: org.id, teamId: team.id, userId: addUser } })),
    onSuccess: () => {
      setAddUser("");
      refresh();
      qc.invalidateQueries({ queryKey: ["team-members", team.id] });
    },
  });
  const drop = useMutation({
    mutationFn: (userId: string) => unwrap(api.POST("/organization/remove-team-member", { body: { organizationId: org.id, teamId: team.id, userId } })),
    onSuccess: () => {
      refresh();
      qc.invalidateQueries({ queryKey: ["team-members", team.id] });
    },
  });
  const setActive = useMutation({
    mutationFn: () => unwrap(api.POST("/organization/set-active-team", { body: { teamId: team.id } })),
    onSuccess: () => qc.invalidateQueries({ queryKey: SESSION_KEY }),
  });
  const userName = (id: string) => org.members.find((m) => m.userId === id)?.user?.name ?? id;
  const inTeam = new Set((members.data ?? []).map((m) => m.userId));
  const active = session.data?.session.activeTeamId === team.id;
  return (
    <li>
      <div className="stack">
        <div className="row">
          <strong>{team.name}</strong> <span className="muted">{team.memberCount === 1 ? t("1 member") : t("{n} members", { n: team.memberCount })}</span>
          {active && <span className="badge ok">{t("active team")}</span>}
          <button type="button" className="link" aria-expanded={open} onClick={() => setOpen((o) => !o)}>
            {open ? t("Hide") : t("Manage")}
          </button>
        </div>
        {open && (
          <div className="stack">
            {canUpdate && (
              <form
                className="row"
                onSubmit={(e) => {
                  e.preventDefault();
                  if (name.trim()) rename.mutate();
                }}
              >
                <Field label="Team name" name={`team-${team.id}`} value={name} onChange={setName} autoComplete="off" />
                <Submit pending={rename.isPending}>{t("Rename")}</Submit>
              </form>
            )}
            <ul className="list" aria-label={t("Members of {team}", { team: team.name })}>
              {(members.data ?? []).map((m) => (
                <li key={m.id}>
                  {userName(m.userId)}
                  {canUpdate && (
                    <button type="button" className="secondary" onClick={() => drop.mutate(m.userId)}>
                      {t("Remove from team")}
                    </button>
                  )}
                </li>
              ))}
            </ul>
            {canUpdate && (
              <form
                className="row"
                onSubmit={(e) => {
                  e.preventDefault();
                  if (addUser) add.mutate();
                }}
              >
                <label>
                  {t("Add a member")}
                  <select value={addUser} onChange={(e) => setAddUser(e.target.value)}>
                    <option value="">{t("Choose…")}</option>
                    {org.members
                      .filter((m) => !inTeam.has(m.userId))
                      .map((m) => (
                        <option key={m.userId} value={m.userId}>
                          {m.user?.name ?? m.userId}
                        </option>
                      ))}
                  </select>
                </label>
                <Submit pending={add.isPending} disabled={!addUser}>
                  {t("Add")}
                </Submit>
              </form>
            )}
            <div className="row">
              {/* Only a team's own member may make it their active team. */}
              {!active && inTeam.has(session.data?.user.id ?? "") && (
                <button type="button" className="secondary" onClick={() => setActive.mutate()}>
                  {t("Make it my active team")}
                </button>
              )}
              {canDelete && (
                <button type="button" className="secondary" onClick={() => remove.mutate()}>
                  {t("Delete team")}
                </button>
              )}
            </div>
            <ErrorBox error={rename.error ?? add.error ?? drop.error ?? remove.error ?? setActive.error ?? members.error} />
          </div>
        )}
      </div>
    </li>
  );
}

export function Teams({ org }: { org: Schemas["FullOrganization"] }) {
  const t = useT();
  const qc = useQueryClient();
  const canCreate = useCan(org.id, { team: ["create"] });
  const [name, setName] = useState("");
  const create = useMutation({
    mutationFn: () => unwrap(api.POST("/organization/create-team", { body: { organizationId: org.id, name: name.trim() } })),
    onSuccess: () => {
      setName("");
      qc.invalidateQueries({ queryKey: ["org", org.id] });
    },
  });
  return (
    <section className="card" aria-labelledby="teams-h">
      <h2 id="teams-h">{t("Teams")}</h2>
      <ul className="list">
        {org.teams.map((team) => (
          <TeamRow key={team.id} team={team} org={org} />
        ))}
      </ul>
      {canCreate && (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            if (name.trim()) create.mutate();
          }}
        >
          <Field label="New team" name="team-name" autoComplete="off" value={name} onChange={setName} />
          <ErrorBox error={create.error} />
          <div>
            <Submit pending={create.isPending} disabled={!name.trim()}>
              {t("Create team")}
            </Submit>
          </div>
        </form>
      )}
    </section>
  );
}

/** Resource × action checkboxes over the server's permission catalogue. */
