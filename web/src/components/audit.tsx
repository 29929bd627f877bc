// The audit log, as the admin area and an organization's "Activity" tab show it: newest first,
// filtered by kind and outcome, more on demand (the server's cursor).
import { useInfiniteQuery } from "@tanstack/react-query";
import { useId, useState } from "react";
import { api, unwrap, type Schemas } from "../api";
import { messages } from "../errors";
import { ago, describeDevice } from "../ua";
import { ErrorBox } from "./ui";

type AuditEvent = Schemas["AuditEvent"];
/** Every action the server records (an enum in the OpenAPI document). */
export type AuditAction = AuditEvent["action"];
type Outcome = Schemas["AuditOutcome"];

const PAGE = 50;

/** What each action reads as (the compiler checks every action has one). */
export const ACTIONS: Record<AuditAction, string> = {
  "user.sign-up": "Signed up",
  "user.sign-in": "Signed in",
  "user.sign-out": "Signed out",
  "session.revoked": "Revoked sessions",
  "password.changed": "Changed the password",
  "password.reset": "Reset the password",
  "password.set": "Set a password",
  "email.change-requested": "Asked to change the email",
  "email.changed": "Changed the email",
  "email.verified": "Verified the email",
  "account.linked": "Linked a sign-in method",
  "account.unlinked": "Unlinked a sign-in method",
  "user.deleted": "Deleted the account",
  "organization.created": "Created the organization",
  "organization.updated": "Updated the organization",
  "organization.deleted": "Deleted the organization",
  "member.added": "Added a member",
  "member.removed": "Removed a member",
  "member.role-changed": "Changed a member's role",
  "invitation.created": "Invited someone",
  "invitation.accepted": "Accepted an invitation",
  "invitation.rejected": "Rejected an invitation",
  "invitation.canceled": "Canceled an invitation",
  "role.created": "Created a role",
  "role.updated": "Updated a role",
  "role.deleted": "Deleted a role",
  "rate-limit.hit": "Was rate limited",
  "admin.user-created": "Admin: created a user",
  "admin.user-updated": "Admin: updated a user",
  "admin.role-set": "Admin: set a role",
  "admin.user-banned": "Admin: banned a user",
  "admin.user-unbanned": "Admin: unbanned a user",
  "admin.sessions-revoked": "Admin: revoked sessions",
  "admin.user-removed": "Admin: removed a user",
  "admin.password-set": "Admin: set a password",
  "admin.impersonation-started": "Admin: started impersonating",
  "admin.impersonation-stopped": "Admin: stopped impersonating",
  "admin.two-factor-disabled": "Admin: turned two-factor sign-in off",
  "two-factor.enrolled": "Two-factor sign-in set up",
  "two-factor.disabled": "Two-factor sign-in turned off",
  "two-factor.backup-codes-regenerated": "New backup codes made",
  "two-factor.challenge": "Second sign-in step",
  "two-factor.device-trusted": "Browser trusted to skip the second step",
  "passkey.registered": "Passkey added",
  "passkey.sign-in": "Signed in with a passkey",
  "passkey.renamed": "Passkey renamed",
  "passkey.deleted": "Passkey removed",
  "passkey.clone-suspected": "Passkey refused: it may have been copied",
  "api-key.created": "Made an API key",
  "api-key.updated": "Changed an API key",
  "api-key.deleted": "Revoked an API key",
  "api-key.first-use": "First use of an API key",
  "api-key.refused": "API key refused",
  "webhook.created": "Added a webhook endpoint",
  "webhook.updated": "Changed a webhook endpoint",
  "webhook.secret-rotated": "Rotated a webhook endpoint's secret",
  "webhook.deleted": "Deleted a webhook endpoint",
  "webhook.redelivered": "Sent a webhook delivery again",
  "webhook.disabled": "Webhook endpoint turned off: its deliveries kept failing",
};

const KINDS: [string, string][] = [
  ["", "Everything"],
  ["user", "Sign-ups, sign-ins, deletions"],
  ["session", "Sessions"],
  ["password", "Passwords"],
  ["email", "Email addresses"],
  ["account", "Sign-in methods"],
  ["two-factor", "Two-factor sign-in"],
  ["passkey", "Passkeys"],
  ["api-key", "API keys"],
  ["webhook", "Webhooks"],
  ["organization", "Organizations"],
  ["member", "Members"],
  ["invitation", "Invitations"],
  ["role", "Roles"],
  ["rate-limit", "Rate limits"],
  ["admin", "Admin actions"],
];

/** Names of users by id, where the page knows them (an organization's members). */
type Names = Record<string, string>;

/** Why a refused action failed, as a sentence: the code's message, else the code in words. */
function why(reason: string): string {
  const sentence = (messages as Record<string, string | undefined>)[reason];
  return sentence ?? reason.toLowerCase().replaceAll("_", " ");
}

function who(id: string | null | undefined, me?: string, names?: Names): string {
  if (!id) return "—";
  if (id === me) return "you";
  return names?.[id] ?? `${id.slice(0, 8)}…`;
}

function Detail({ e, me, names }: { e: AuditEvent; me?: string; names?: Names }) {
  // Whom it was about, when that is not who acted.
  const about = e.userId && e.userId !== e.actorId ? `user: ${who(e.userId, me, names)}` : null;
  const parts = [about, e.target, ...Object.entries(e.details).map(([k, v]) => `${k}: ${v}`)].filter(Boolean);
  return <span className="muted">{parts.join(" · ")}</span>;
}

/** The log of the whole server (`organizationId` absent: the admin route) or of one organization. */
export function AuditLog({ organizationId, me, names }: { organizationId?: string; me?: string; names?: Names }) {
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
          <label htmlFor={kindId}>Show</label>
          <select id={kindId} value={kind} onChange={(e) => setKind(e.target.value)}>
            {KINDS.filter(([k]) => !organizationId || ["", "organization", "member", "invitation", "role"].includes(k)).map(([k, label]) => (
              <option key={k} value={k}>
                {label}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor={outcomeId}>Outcome</label>
          <select id={outcomeId} value={outcome} onChange={(e) => setOutcome(e.target.value as "" | Outcome)}>
            <option value="">Any</option>
            <option value="success">Succeeded</option>
            <option value="failure">Failed</option>
          </select>
        </div>
      </div>
      <ErrorBox error={log.error} />
      {log.isSuccess && events.length === 0 && <p className="muted">Nothing recorded.</p>}
      {events.length > 0 && (
        <table>
          <thead>
            <tr>
              <th>When</th>
              <th>What</th>
              <th>Who</th>
              <th className="hide-sm">From</th>
              <th className="hide-sm">Details</th>
            </tr>
          </thead>
          <tbody>
            {events.map((e) => (
              <tr key={e.id} data-action={e.action}>
                <td title={e.at}>{ago(e.at)}</td>
                <td>
                  {ACTIONS[e.action] ?? e.action}{" "}
                  {e.outcome === "failure" && (
                    <span className="badge danger" title={e.reason ?? undefined}>
                      failed{e.reason ? `: ${why(e.reason)}` : ""}
                    </span>
                  )}
                </td>
                <td title={e.actorId ?? undefined}>{who(e.actorId, me, names)}</td>
                <td className="hide-sm">
                  {e.ipAddress ?? "—"} <span className="muted">{e.userAgent ? describeDevice(e.userAgent) : ""}</span>
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
          {log.isFetchingNextPage ? "Loading…" : "Show older"}
        </button>
      )}
    </div>
  );
}
