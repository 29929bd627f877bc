// The organizations list with the active one, the create form (slug checked as you type),
// your pending invitations, and accepting one from its link.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { Link, Navigate, useNavigate, useParams } from "react-router";
import { api, ApiError, unwrap } from "../../api";
import { ErrorBox, Field, Notice, Submit } from "../../components/ui";
import { SESSION_KEY, useSession, useSessionChanged } from "../../session";
import { roleName, slugify, statusName, useSlugStatus } from "./hooks";
import { useT, useTx } from "../../i18n";

function CreateOrganization() {
  const t = useT();
  const [name, setName] = useState("");
  const [slug, setSlug] = useState("");
  const [slugEdited, setSlugEdited] = useState(false);
  const status = useSlugStatus(slug);
  const qc = useQueryClient();
  const navigate = useNavigate();
  const create = useMutation({
    mutationFn: () => unwrap(api.POST("/organization/create", { body: { name: name.trim(), slug } })),
    onSuccess: async (org) => {
      await qc.invalidateQueries({ queryKey: ["orgs"] });
      await qc.invalidateQueries({ queryKey: SESSION_KEY });
      navigate(`/organizations/${org.id}`);
    },
  });
  const slugHint =
    status === "available" ? (
      <span className="muted">✓ {t("{slug} is available", { slug })}</span>
    ) : status === "taken" ? (
      <span className="field-error">{t("That slug is taken.")}</span>
    ) : status === "checking" ? (
      <span className="muted">{t("Checking…")}</span>
    ) : null;
  const slugError = status && status !== "available" && status !== "taken" && status !== "checking" ? status : null;
  return (
    <section className="card" aria-labelledby="create-h">
      <h2 id="create-h">{t("Create an organization")}</h2>
      <form
        onSubmit={(e: FormEvent) => {
          e.preventDefault();
          if (name.trim() && status === "available") create.mutate();
        }}
        noValidate
      >
        <Field
          label="Name"
          name="org-name"
          autoComplete="organization"
          value={name}
          onChange={(v) => {
            setName(v);
            if (!slugEdited) setSlug(slugify(v));
          }}
        />
        <Field
          label="Slug"
          name="org-slug"
          autoComplete="off"
          value={slug}
          onChange={(v) => {
            setSlugEdited(true);
            setSlug(v);
          }}
          hint={slugHint}
          error={slugError}
        />
        <ErrorBox error={create.error} />
        <div>
          <Submit pending={create.isPending} disabled={!name.trim() || status !== "available"}>
            {t("Create organization")}
          </Submit>
        </div>
      </form>
    </section>
  );
}

function MyInvitations() {
  const t = useT();
  const tx = useTx();
  const qc = useQueryClient();
  const invitations = useQuery({ queryKey: ["user-invitations"], queryFn: () => unwrap(api.GET("/organization/list-user-invitations")), retry: false });
  const pending = (invitations.data ?? []).filter((i) => i.status === "pending");
  // Invitations wait for a verified address: say so rather than show nothing.
  const unverified = invitations.error instanceof ApiError && invitations.error.code === "EMAIL_VERIFICATION_REQUIRED_FOR_INVITATION";
  if (unverified)
    return (
      <section className="card" aria-labelledby="inv-h">
        <h2 id="inv-h">{t("Invitations for you")}</h2>
        <p className="muted">
          {tx("Invitations sent to your address show here once it is verified. {link}.", {
            link: <Link to="/account">{t("Verify it from your account page")}</Link>,
          })}
        </p>
      </section>
    );
  if (!pending.length) return null;
  return (
    <section className="card" aria-labelledby="inv-h">
      <h2 id="inv-h">{t("Invitations for you")}</h2>
      <ul className="list">
        {pending.map((i) => (
          <li key={i.id}>
            <span>
              {tx("{organization} invites you as {role}", {
                organization: <strong>{i.organizationName}</strong>,
                role: <strong>{roleName(i.role, t)}</strong>,
              })}
            </span>
            <Link to={`/accept-invitation/${i.id}`} aria-label={t("Open the invitation to {organization}", { organization: i.organizationName })} onClick={() => qc.invalidateQueries({ queryKey: ["user-invitations"] })}>
              {t("Open")}
            </Link>
          </li>
        ))}
      </ul>
    </section>
  );
}

export function Organizations() {
  const t = useT();
  const session = useSession();
  const qc = useQueryClient();
  const orgs = useQuery({ queryKey: ["orgs"], queryFn: () => unwrap(api.GET("/organization/list")), enabled: !!session.data });
  const setActive = useMutation({
    mutationFn: (organizationId: string) => unwrap(api.POST("/organization/set-active", { body: { organizationId } })),
    onSuccess: () => qc.invalidateQueries({ queryKey: SESSION_KEY }),
  });
  if (session.isPending) return <main>{t("Loading…")}</main>;
  if (!session.data) return <Navigate to="/sign-in?redirectTo=/organizations" replace />;
  const active = session.data.session.activeOrganizationId;
  return (
    <main>
      <h1>{t("Organizations")}</h1>
      <section className="card" aria-labelledby="orgs-h">
        <h2 id="orgs-h">{t("Yours")}</h2>
        <ErrorBox error={orgs.error ?? setActive.error} />
        {orgs.data?.length === 0 && <p className="muted">{t("You are not in any organization yet.")}</p>}
        <ul className="list">
          {(orgs.data ?? []).map((o) => (
            <li key={o.id}>
              <span>
                <Link to={`/organizations/${o.id}`}>{o.name}</Link> <span className="muted">/{o.slug}</span>{" "}
                {o.id === active && <span className="badge ok">{t("current")}</span>}
              </span>
              {o.id !== active && (
                <button type="button" className="secondary" aria-label={t("Switch to {organization}", { organization: o.name })} disabled={setActive.isPending} onClick={() => setActive.mutate(o.id)}>
                  {t("Switch to it")}
                </button>
              )}
            </li>
          ))}
        </ul>
      </section>
      <MyInvitations />
      <CreateOrganization />
    </main>
  );
}

/** The role names assignable here: built-in, configured and this organization's custom roles. */
export function AcceptInvitation() {
  const t = useT();
  const tx = useTx();
  const { id = "" } = useParams();
  const session = useSession();
  const qc = useQueryClient();
  const navigate = useNavigate();
  const here = `/accept-invitation/${id}`;
  const invitation = useQuery({
    queryKey: ["invitation", id],
    queryFn: () => unwrap(api.GET("/organization/get-invitation", { params: { query: { id } } })),
    enabled: !!session.data,
    retry: false,
  });
  const accept = useMutation({
    mutationFn: () => unwrap(api.POST("/organization/accept-invitation", { body: { invitationId: id } })),
    onSuccess: async (a) => {
      await qc.invalidateQueries({ queryKey: SESSION_KEY });
      await qc.invalidateQueries({ queryKey: ["orgs"] });
      navigate(`/organizations/${a.invitation.organizationId}`, { state: { joined: invitation.data?.organizationName ?? null } });
    },
  });
  const reject = useMutation({
    mutationFn: () => unwrap(api.POST("/organization/reject-invitation", { body: { invitationId: id } })),
  });
  const email = new URLSearchParams(window.location.search).get("email") ?? "";
  const changed = useSessionChanged();
  const signOut = useMutation({
    mutationFn: () => unwrap(api.POST("/sign-out")),
    onSuccess: changed,
  });
  const otherRecipient =
    invitation.error instanceof ApiError && invitation.error.code === "YOU_ARE_NOT_THE_RECIPIENT_OF_THE_INVITATION";
  if (session.isPending) return <main className="narrow">{t("Loading…")}</main>;
  if (!session.data) {
    const q = new URLSearchParams({ redirectTo: here, ...(email ? { email } : {}) }).toString();
    return (
      <main className="narrow">
        <div className="card stack">
          <h1>{t("Your invitation")}</h1>
          <p>{t("Sign in, or create an account with the address the invitation was sent to, to see who invites you and to answer it.")}</p>
          <div className="row">
            <Link to={`/sign-in?${q}`}>{t("Sign in")}</Link>
            <Link to={`/sign-up?${q}`}>{t("Create an account")}</Link>
          </div>
        </div>
      </main>
    );
  }
  const inv = invitation.data;
  return (
    <main className="narrow">
      <div className="card stack">
        <h1>{t("Invitation")}</h1>
        {invitation.isPending && <p>{t("Loading…")}</p>}
        <ErrorBox error={invitation.error} />
        {inv && (
          <>
            <p>
              {tx("{inviter} invites you to join {organization} as {role}.", {
                inviter: <strong>{inv.inviterEmail}</strong>,
                organization: <strong>{inv.organizationName}</strong>,
                role: <strong>{roleName(inv.role, t)}</strong>,
              })}
            </p>
            {inv.status !== "pending" ? (
              <p className="muted">{t("This invitation is {status}.", { status: statusName(inv.status, t) })}</p>
            ) : reject.isSuccess ? (
              <Notice>{t("You declined the invitation.")}</Notice>
            ) : (
              <div className="row">
                <button type="button" disabled={accept.isPending} aria-busy={accept.isPending} onClick={() => accept.mutate()}>
                  {accept.isPending ? t("Please wait…") : t("Accept")}
                </button>
                <button type="button" className="secondary" disabled={reject.isPending} onClick={() => reject.mutate()}>
                  {t("Decline")}
                </button>
              </div>
            )}
          </>
        )}
        <ErrorBox error={accept.error ?? reject.error} />
        <p className="muted">{t("Signed in as {email}.", { email: session.data.user.email })}</p>
        {otherRecipient && (
          <p>
            <button type="button" className="secondary" disabled={signOut.isPending} onClick={() => signOut.mutate()}>
              {t("Sign out and use the invited account")}
            </button>
          </p>
        )}
      </div>
    </main>
  );
}
