// An organization's members: roles (confirmed before they change), removal, leaving.
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useNavigate } from "react-router";
import { api, unwrap, type Schemas } from "../../api";
import { Confirm, Notice } from "../../components/ui";
import { SESSION_KEY } from "../../session";
import { grantable, ownerCount, rolesName, rolesOf, useCan, useRoleNames } from "./hooks";
import { useT } from "../../i18n";

function nameOf(m: Schemas["Member"]): string {
  return m.user?.name ?? m.userId;
}

export function Members({ org, me }: { org: Schemas["FullOrganization"]; me: string }) {
  const t = useT();
  const qc = useQueryClient();
  const navigate = useNavigate();
  const mine = rolesOf(org, me);
  const roles = grantable(useRoleNames(org.id), mine);
  const owners = ownerCount(org);
  const isOwner = (m: Schemas["Member"]) => m.role.split(",").includes("owner");
  // An owner is removed only by an owner, and never the last one (the server refuses both).
  const removable = (m: Schemas["Member"]) => !isOwner(m) || (mine.includes("owner") && owners > 1);
  const lastOwner = mine.includes("owner") && owners <= 1;
  const canUpdate = useCan(org.id, { member: ["update"] });
  const canDelete = useCan(org.id, { member: ["delete"] });
  const [removing, setRemoving] = useState<Schemas["Member"] | null>(null);
  const [leaving, setLeaving] = useState(false);
  // A role picked waits for confirmation (member → owner must not be one mis-click).
  const [changing, setChanging] = useState<{ member: Schemas["Member"]; role: string } | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const refresh = () => qc.invalidateQueries({ queryKey: ["org", org.id] });
  const setRole = useMutation({
    mutationFn: () =>
      unwrap(api.POST("/organization/update-member-role", { body: { organizationId: org.id, memberId: changing?.member.id ?? "", role: changing?.role ?? "" } })),
    onSuccess: async () => {
      setNotice(changing ? t("{name} is now {role}.", { name: nameOf(changing.member), role: rolesName(changing.role, t) }) : null);
      setChanging(null);
      await refresh();
      await qc.invalidateQueries({ queryKey: ["permissions", org.id] });
    },
  });
  const remove = useMutation({
    mutationFn: () => unwrap(api.POST("/organization/remove-member", { body: { organizationId: org.id, memberIdOrEmail: removing?.id ?? "" } })),
    onSuccess: () => {
      setRemoving(null);
      refresh();
    },
  });
  const leave = useMutation({
    mutationFn: () => unwrap(api.POST("/organization/leave", { body: { organizationId: org.id } })),
    onSuccess: async () => {
      await qc.invalidateQueries({ queryKey: ["orgs"] });
      await qc.invalidateQueries({ queryKey: SESSION_KEY });
      navigate("/organizations");
    },
  });
  return (
    <section className="card" aria-labelledby="members-h">
      <h2 id="members-h">{t("Members")}</h2>
      {notice && <Notice>{notice}</Notice>}
      <table>
        <thead>
          <tr>
            <th>{t("Name")}</th>
            <th className="hide-sm">{t("Email")}</th>
            <th>{t("Role")}</th>
            <th>
              <span className="muted">{t("Actions")}</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {org.members.map((m) => (
            <tr key={m.id} data-email={m.user?.email}>
              <td>
                {m.user?.name ?? m.userId} {m.userId === me && <span className="badge">{t("you")}</span>}
              </td>
              <td className="hide-sm">{m.user?.email}</td>
              <td>
                {canUpdate && m.userId !== me && removable(m) ? (
                  <select
                    aria-label={t("Role of {name}", { name: nameOf(m) })}
                    value={m.role}
                    disabled={setRole.isPending}
                    onChange={(e) => {
                      setNotice(null);
                      setChanging({ member: m, role: e.target.value });
                    }}
                  >
                    {[...new Set([m.role, ...roles])].map((r) => (
                      <option key={r} value={r}>
                        {rolesName(r, t)}
                      </option>
                    ))}
                  </select>
                ) : (
                  rolesName(m.role, t)
                )}
              </td>
              <td>
                {m.userId === me ? (
                  lastOwner ? (
                    <span className="muted">{t("Only owner: make someone else owner to leave")}</span>
                  ) : (
                    <button type="button" className="secondary" onClick={() => setLeaving(true)}>
                      {t("Leave")}
                    </button>
                  )
                ) : (
                  canDelete &&
                  removable(m) && (
                    <button type="button" className="secondary" onClick={() => setRemoving(m)}>
                      {t("Remove")}
                    </button>
                  )
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {changing && (
        <Confirm
          title={t("Make {name} {role}?", { name: nameOf(changing.member), role: rolesName(changing.role, t) })}
          body={
            changing.role.split(",").includes("owner")
              ? t("An owner can do everything in {organization}, delete it included.", { organization: org.name })
              : t("{name} will be {role} instead of {was}.", {
                  name: nameOf(changing.member),
                  role: rolesName(changing.role, t),
                  was: rolesName(changing.member.role, t),
                })
          }
          confirm="Change role"
          action={setRole}
          onClose={() => setChanging(null)}
        />
      )}
      {removing && (
        <Confirm
          title="Remove this member?"
          body={t("{name} will lose access to {organization}.", { name: removing.user?.name ?? removing.userId, organization: org.name })}
          confirm="Remove"
          action={remove}
          onClose={() => setRemoving(null)}
        />
      )}
      {leaving && (
        <Confirm
          title={t("Leave {organization}?", { organization: org.name })}
          body="You will lose access until someone invites you again."
          confirm="Leave"
          action={leave}
          onClose={() => setLeaving(false)}
        />
      )}
    </section>
  );
}
