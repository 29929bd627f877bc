// An organization's invitations: invite by address and role, cancel.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api, unwrap, type Schemas } from "../../api";
import { ErrorBox, Field, Notice, Submit } from "../../components/ui";
import { emailProblem } from "../auth";
import { grantable, roleName, rolesOf, statusName, useCan, useRoleNames } from "./hooks";
import { useT } from "../../i18n";

export function Invitations({ org, me }: { org: Schemas["FullOrganization"]; me: string }) {
  const t = useT();
  const qc = useQueryClient();
  // Only roles this member may give.
  const roles = grantable(useRoleNames(org.id), rolesOf(org, me));
  const canInvite = useCan(org.id, { invitation: ["create"] });
  const canCancel = useCan(org.id, { invitation: ["cancel"] });
  const [email, setEmail] = useState("");
  const [role, setRole] = useState("member");
  const [touched, setTouched] = useState(false);
  const list = useQuery({
    queryKey: ["invitations", org.id],
    queryFn: () => unwrap(api.GET("/organization/list-invitations", { params: { query: { organizationId: org.id } } })),
  });
  const invite = useMutation({
    mutationFn: () => unwrap(api.POST("/organization/invite-member", { body: { organizationId: org.id, email: email.trim(), role } })),
    onSuccess: () => {
      setEmail("");
      setTouched(false);
      qc.invalidateQueries({ queryKey: ["invitations", org.id] });
    },
  });
  const cancel = useMutation({
    mutationFn: (invitationId: string) => unwrap(api.POST("/organization/cancel-invitation", { body: { invitationId } })),
    onSuccess: () => qc.invalidateQueries({ queryKey: ["invitations", org.id] }),
  });
  return (
    <section className="card" aria-labelledby="invitations-h">
      <h2 id="invitations-h">{t("Invitations")}</h2>
      {canInvite && (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            setTouched(true);
            if (!emailProblem(email)) invite.mutate();
          }}
          noValidate
        >
          <Field label="Email to invite" name="invite-email" type="email" autoComplete="off" value={email} onChange={setEmail} error={touched ? emailProblem(email) : null} />
          <label>
            {t("Role")}
            <select name="invite-role" value={role} onChange={(e) => setRole(e.target.value)}>
              {roles.map((r) => (
                <option key={r} value={r}>
                  {roleName(r, t)}
                </option>
              ))}
            </select>
          </label>
          <ErrorBox error={invite.error} />
          {invite.isSuccess && <Notice>{t("Invitation sent.")}</Notice>}
          <div>
            <Submit pending={invite.isPending}>{t("Send invitation")}</Submit>
          </div>
        </form>
      )}
      <ErrorBox error={list.error ?? cancel.error} />
      <ul className="list" aria-label={t("Invitations")}>
        {(list.data ?? []).map((i) => (
          <li key={i.id}>
            <span>
              {i.email} · {roleName(i.role, t)} · <span className="badge">{statusName(i.status, t)}</span>
            </span>
            {canCancel && i.status === "pending" && (
              <button type="button" className="secondary" disabled={cancel.isPending} onClick={() => cancel.mutate(i.id)}>
                {t("Cancel")}
              </button>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}
