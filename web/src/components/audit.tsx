// The audit log, as the admin area and an organization's "Activity" tab show it: newest first,
// filtered by kind and outcome, more on demand (the server's cursor).
import { useInfiniteQuery } from "@tanstack/react-query";
import { useId, useState } from "react";
import { api, unwrap, type Schemas } from "../api";
import { messages } from "../errors";
import { ago, describeDevice } from "../ua";
import { ErrorBox } from "./ui";
import { marked, named, useT, type T } from "../i18n";

type AuditEvent = Schemas["AuditEvent"];
/** Every action the server records (an enum in the OpenAPI document). */
export type AuditAction = AuditEvent["action"];
type Outcome = Schemas["AuditOutcome"];

const PAGE = 50;

/** What each action reads as (the compiler checks every action has one). */
export const ACTIONS: Record<AuditAction, string> = {
  "user.sign-up": marked("Signed up"),
  "user.sign-in": marked("Signed in"),
  "user.sign-out": marked("Signed out"),
  "session.revoked": marked("Revoked sessions"),
  "password.changed": marked("Changed the password"),
  "password.reset": marked("Reset the password"),
  "password.set": marked("Password set"),
  "email.change-requested": marked("Asked to change the email"),
  "email.changed": marked("Changed the email"),
  "email.verified": marked("Verified the email"),
  "account.linked": marked("Linked a sign-in method"),
  "account.unlinked": marked("Unlinked a sign-in method"),
  "user.deleted": marked("Deleted the account"),
  "organization.created": marked("Created the organization"),
  "organization.updated": marked("Updated the organization"),
  "organization.deleted": marked("Deleted the organization"),
  "member.added": marked("Added a member"),
  "member.removed": marked("Removed a member"),
  "member.role-changed": marked("Changed a member's role"),
  "invitation.created": marked("Invited someone"),
  "invitation.accepted": marked("Accepted an invitation"),
  "invitation.rejected": marked("Rejected an invitation"),
  "invitation.canceled": marked("Canceled an invitation"),
  "role.created": marked("Created a role"),
  "role.updated": marked("Updated a role"),
  "role.deleted": marked("Deleted a role"),
  "rate-limit.hit": marked("Was rate limited"),
  "admin.user-created": marked("Admin: created a user"),
  "admin.user-updated": marked("Admin: updated a user"),
  "admin.role-set": marked("Admin: set a role"),
  "admin.user-banned": marked("Admin: banned a user"),
  "admin.user-unbanned": marked("Admin: unbanned a user"),
  "admin.sessions-revoked": marked("Admin: revoked sessions"),
  "admin.user-removed": marked("Admin: removed a user"),
  "admin.password-set": marked("Admin: set a password"),
  "admin.impersonation-started": marked("Admin: started impersonating"),
  "admin.impersonation-stopped": marked("Admin: stopped impersonating"),
  "admin.two-factor-disabled": marked("Admin: turned two-factor sign-in off"),
  "two-factor.enrolled": marked("Two-factor sign-in set up"),
  "two-factor.disabled": marked("Two-factor sign-in turned off"),
  "two-factor.backup-codes-regenerated": marked("New backup codes made"),
  "two-factor.challenge": marked("Second sign-in step"),
  "two-factor.device-trusted": marked("Browser trusted to skip the second step"),
  "passkey.registered": marked("Passkey added"),
  "passkey.sign-in": marked("Signed in with a passkey"),
  "passkey.renamed": marked("Passkey renamed"),
  "passkey.deleted": marked("Passkey removed"),
  "passkey.clone-suspected": marked("Passkey refused: it may have been copied"),
  "api-key.created": marked("Made an API key"),
  "api-key.updated": marked("Changed an API key"),
  "api-key.deleted": marked("Revoked an API key"),
  "api-key.first-use": marked("First use of an API key"),
  "api-key.refused": marked("API key refused"),
  "webhook.created": marked("Added a webhook endpoint"),
  "webhook.updated": marked("Changed a webhook endpoint"),
  "webhook.secret-rotated": marked("Rotated a webhook endpoint's secret"),
  "webhook.deleted": marked("Deleted a webhook endpoint"),
  "webhook.redelivered": marked("Sent a webhook delivery again"),
  "webhook.disabled": marked("Webhook endpoint turned off: its deliveries kept failing"),
};

const KINDS: [string, string][] = [
  ["", marked("Everything")],
  ["user", marked("Sign-ups, sign-ins, deletions")],
  ["session", marked("Sessions")],
  ["password", marked("Passwords")],
  ["email", marked("Email addresses")],
  ["account", marked("Sign-in methods")],
  ["two-factor", marked("Two-factor sign-in")],
  ["passkey", marked("Passkeys")],
  ["api-key", marked("API keys")],
  ["webhook", marked("Webhooks")],
  ["organization", marked("Organizations")],
  ["member", marked("Members")],
  ["invitation", marked("Invitations")],
  ["role", marked("Roles")],
  ["rate-limit", marked("Rate limits")],
  ["admin", marked("Admin actions")],
];

/** Names of users by id, where the page knows them (an organization's members). */
type Names = Record<string, string>;

/** Why a refused action failed, as a sentence: the code's message, else the code in words. */
function why(reason: string, t: T): string {
  const sentence = (messages as Record<string, string | undefined>)[reason];
  return sentence ? t(sentence) : reason.toLowerCase().replaceAll("_", " ");
}

function who(t: T, id: string | null | undefined, me?: string, names?: Names): string {
  if (!id) return "—";
  if (id === me) return t("you");
  return names?.[id] ?? `${id.slice(0, 8)}…`;
}

function Detail({ e, me, names }: { e: AuditEvent; me?: string; names?: Names }) {
  const t = useT();
  // Whom it was about, when that is not who acted.
  const about = e.userId && e.userId !== e.actorId ? t("user: {name}", { name: who(t, e.userId, me, names) }) : null;
  const parts = [about, e.target, ...Object.entries(e.details).map(([k, v]) => `${k}: ${v}`)].filter(Boolean);
  return <span className="muted">{parts.join(" · ")}</span>;
}

/** The log of the whole server (`organizationId` absent: the admin route) or of one organization. */
export function AuditLog({ organizationId, me, names }: { organizationId?: string; me?: string; names?: Names }) {
  const t = useT();
  const [kind, setKind] = useState("");
  const [outcome, setOutcome] = useState<"" | Outcome>("");
  const kindId = useId();
  const outcomeId = useId();
  const log = useInfiniteQuery({
    queryKey: ["audit", organizationId ?? "*", kind, outcome],
    initialPageParam: null as string | null,
    queryFn: ({ pageParam }) => {
      const query = {
        action: kind || undefined,
        outcome: outcome || undefined,
        limit: PAGE,
        cursor: pageParam ?? undefined,
      };
      return organizationId
        ? unwrap(api.GET("/organization/audit-log", { params: { query: { ...query, organizationId } } }))
        : unwrap(api.GET("/admin/audit-log", { params: { query } }));
    },
    getNextPageParam: (last) => last.nextCursor ?? undefined,
  });
  const events = log.data?.pages.flatMap((p) => p.events) ?? [];
  return (
    <div className="stack">
      <div className="row">
        <div className="field">
          <label htmlFor={kindId}>{t("Show")}</label>
          <select id={kindId} value={kind} onChange={(e) => setKind(e.target.value)}>
            {KINDS.filter(([k]) => !organizationId || ["", "organization", "member", "invitation", "role"].includes(k)).map(([k, label]) => (
              <option key={k} value={k}>
                {t(label)}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor={outcomeId}>{t("Outcome")}</label>
          <select id={outcomeId} value={outcome} onChange={(e) => setOutcome(e.target.value as "" | Outcome)}>
            <option value="">{t("Any")}</option>
            <option value="success">{t("Succeeded")}</option>
            <option value="failure">{t("Failed")}</option>
          </select>
        </div>
      </div>
      <ErrorBox error={log.error} />
      {log.isSuccess && events.length === 0 && <p className="muted">{t("Nothing recorded.")}</p>}
      {events.length > 0 && (
        <table>
          <thead>
            <tr>
              <th>{t("When")}</th>
              <th>{t("What")}</th>
              <th>{t("Who")}</th>
              <th className="hide-sm">{t("From")}</th>
              <th className="hide-sm">{t("Details")}</th>
            </tr>
          </thead>
          <tbody>
            {events.map((e) => (
              <tr key={e.id} data-action={e.action}>
                <td title={e.at}>{ago(e.at, Date.now(), t)}</td>
                <td>
                  {named(ACTIONS, e.action, t)}{" "}
                  {e.outcome === "failure" && (
                    <span className="badge danger" title={e.reason ?? undefined}>
                      {e.reason ? t("failed: {why}", { why: why(e.reason, t) }) : t("failed")}
                    </span>
                  )}
                </td>
                <td title={e.actorId ?? undefined}>{who(t, e.actorId, me, names)}</td>
                <td className="hide-sm">
                  {e.ipAddress ?? "—"} <span className="muted">{e.userAgent ? describeDevice(e.userAgent, t) : ""}</span>
                </td>
                <td className="hide-sm">
                  <Detail e={e} me={me} names={names} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {log.hasNextPage && (
        <button type="button" className="secondary" disabled={log.isFetchingNextPage} onClick={() => log.fetchNextPage()}>
          {log.isFetchingNextPage ? t("Loading…") : t("Show older")}
        </button>
      )}
    </div>
  );
}
