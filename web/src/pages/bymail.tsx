// Sign-in, sign-up and password reset by a code or a link sent by mail (the email-OTP and
// magic-link plugins): the "Email me a code" / "Email me a link" buttons of the sign-in and
// sign-up pages, the code step with its resend, the "check your inbox" of a link, and the
// reset by code of the forgot-password page, and the account page's verification by code. A mailed link lands on the page it was asked
// from (the server sets the session and redirects); its errors land on the error page.
import { useMutation } from "@tanstack/react-query";
import { useState } from "react";
import { Link } from "react-router";
import { api, ApiError, unwrap } from "../api";
import { isChallenge, type Challenge } from "../components/twofactor";
import { ErrorBox, Field, Notice, PasswordField, Submit } from "../components/ui";
import { marked, useT, useTx } from "../i18n";
import { usePageSettings } from "../settings";
import { newPasswordProblem, passwordHint } from "./auth";

/** What was mailed, to which address. */
export type Sent = { kind: "code" | "link"; email: string };

function sendCode(email: string, type: "sign-in" | "forget-password") {
  return unwrap(api.POST("/email-otp/send-verification-otp", { body: { email, type } }));
}

/** A code's refusal: past its tries it is dead, and only a new one helps. */
function CodeError({ error }: { error: unknown }) {
  const t = useT();
  if (error instanceof ApiError && error.code === "TOO_MANY_ATTEMPTS" && error.status === 403)
    return (
      <div role="alert" className="alert">
        {t("Too many wrong codes: this one no longer works. Ask for a new code.")}
      </div>
    );
  return <ErrorBox error={error} />;
}

/** "Email me a code" and "Email me a link", when the server sends mail. `check` validates
 * the form's address first (and says what is wrong with it). */
export function MailButtons(props: {
  email: string;
  check: () => boolean;
  redirectTo: string;
  name?: string;
  onSent: (s: Sent) => void;
}) {
  const settings = usePageSettings();
  const t = useT();
  const email = props.email.trim();
  const send = useMutation({
    mutationFn: async (kind: Sent["kind"]): Promise<unknown> =>
      kind === "code"
        ? sendCode(email, "sign-in")
        : unwrap(
            api.POST("/sign-in/magic-link", {
              body: {
                email,
                name: props.name?.trim() || undefined,
                callbackURL: props.redirectTo,
                newUserCallbackURL: props.redirectTo,
                errorCallbackURL: "/error",
              },
            }),
          ),
    onSuccess: (_, kind) => props.onSent({ kind, email }),
  });
  if (!settings.byMail) return null;
  const go = (kind: Sent["kind"]) => {
    if (props.check()) send.mutate(kind);
  };
  return (
    <div className="stack">
      <div className="row">
        <button type="button" className="secondary" disabled={send.isPending} onClick={() => go("code")}>
          {t("Email me a code")}
        </button>
        <button type="button" className="secondary" disabled={send.isPending} onClick={() => go("link")}>
          {t("Email me a link")}
        </button>
      </div>
      <ErrorBox error={send.error} />
    </div>
  );
}

/** The code step of a sign-in (or sign-up: `name` for a new account) by code. */
export function CodeSignIn(props: {
  email: string;
  name?: string;
  onDone: () => void | Promise<void>;
  onChallenge: (c: Challenge) => void;
  onCancel: () => void;
}) {
  const [code, setCode] = useState("");
  const [touched, setTouched] = useState(false);
  const t = useT();
  const tx = useTx();
  const signIn = useMutation({
    mutationFn: () =>
      unwrap(api.POST("/sign-in/email-otp", { body: { email: props.email, otp: code.trim(), name: props.name?.trim() || undefined } })),
    onSuccess: async (data) => {
      if (isChallenge(data)) props.onChallenge(data);
      else await props.onDone();
    },
  });
  const resend = useMutation({
    mutationFn: () => sendCode(props.email, "sign-in"),
    onSuccess: () => {
      setCode("");
      signIn.reset();
    },
  });
  return (
    <form
      aria-label={t("Sign in with a code")}
      onSubmit={(e) => {
        e.preventDefault();
        setTouched(true);
        if (code.trim()) signIn.mutate();
      }}
      noValidate
    >
      <p className="muted">
        {tx("We emailed a 6-digit code to {email}. It works once, for 5 minutes.", { email: <b>{props.email}</b> })}{" "}
        {props.name ? t("Entering it creates your account.") : t("If no account uses this address yet, entering it creates one.")}
      </p>
      <Field
        label="Code from the email"
        name="otp"
        autoComplete="one-time-code"
        value={code}
        onChange={setCode}
        error={touched && !code.trim() ? marked("Enter the 6-digit code.") : null}
      />
      <CodeError error={signIn.error ?? resend.error} />
      {resend.isSuccess && !signIn.error && <Notice>{t("We sent a new code to {email}.", { email: props.email })}</Notice>}
      <Submit pending={signIn.isPending}>{props.name ? t("Create account") : t("Sign in")}</Submit>
      <p className="muted row">
        <button type="button" className="link" disabled={resend.isPending} onClick={() => resend.mutate()}>
          {t("Email me a new code")}
        </button>
        <button type="button" className="link" onClick={props.onCancel}>
          {t("Use another way")}
        </button>
      </p>
    </form>
  );
}

/** After a sign-in link went out. */
export function LinkSent(props: { email: string; onCancel: () => void }) {
  const t = useT();
  return (
    <div className="stack">
      <Notice>
        {t("Check your inbox: we sent a sign-in link to {email}. Open it on this device or any other — it works once, for 5 minutes.", {
          email: props.email,
        })}
      </Notice>
      <p className="muted">
        <button type="button" className="link" onClick={props.onCancel}>
          {t("Use another way")}
        </button>
      </p>
    </div>
  );
}

/** The forgot-password page's other way (and the account page's way to a first password):
 * a code by mail, then the new password. */
export function ResetByCode(props: { email: string; onCancel: () => void; onDone?: () => void }) {
  const rules = usePageSettings().password;
  const t = useT();
  const tx = useTx();
  const [code, setCode] = useState("");
  const [password, setPassword] = useState("");
  const [confirm, setConfirm] = useState("");
  const [touched, setTouched] = useState(false);
  const reset = useMutation({
    mutationFn: () =>
      unwrap(api.POST("/email-otp/reset-password", { body: { email: props.email, otp: code.trim(), password } })),
    onSuccess: () => props.onDone?.(),
  });
  const resend = useMutation({
    mutationFn: () => unwrap(api.POST("/email-otp/request-password-reset", { body: { email: props.email } })),
  });
  const errors = {
    code: touched && !code.trim() ? marked("Enter the 6-digit code.") : null,
    password: touched ? newPasswordProblem(password, rules, t) : null,
    confirm: touched && confirm !== password ? marked("The two passwords differ.") : null,
  };
  if (reset.isSuccess)
    return (
      <div className="stack">
        <Notice>{t("Your password was changed.")}</Notice>
        <p>
          <Link to={`/sign-in?${new URLSearchParams({ email: props.email })}`}>{t("Sign in with your new password")}</Link>
        </p>
      </div>
    );
  return (
    <form
      aria-label={t("Reset with a code")}
      onSubmit={(e) => {
        e.preventDefault();
        setTouched(true);
        if (!code.trim() || newPasswordProblem(password, rules) || confirm !== password) return;
        reset.mutate();
      }}
      noValidate
    >
      <p className="muted">
        {tx("If an account uses {email}, we emailed it a 6-digit code. It works once, for 5 minutes.", { email: <b>{props.email}</b> })}
      </p>
      <Field label="Code from the email" name="otp" autoComplete="one-time-code" value={code} onChange={setCode} error={errors.code} />
      <PasswordField label="New password" name="new-password" autoComplete="new-password" value={password} onChange={setPassword} error={errors.password} hint={passwordHint(rules, t)} />
      <PasswordField label="Repeat the new password" name="confirm-password" autoComplete="new-password" value={confirm} onChange={setConfirm} error={errors.confirm} />
      <CodeError error={reset.error ?? resend.error} />
      {resend.isSuccess && !reset.error && <Notice>{t("We sent a new code.")}</Notice>}
      <Submit pending={reset.isPending}>{t("Set the new password")}</Submit>
      <p className="muted row">
        <button type="button" className="link" disabled={resend.isPending} onClick={() => resend.mutate()}>
          {t("Email me a new code")}
        </button>
        <button type="button" className="link" onClick={props.onCancel}>
          {t("Use a link instead")}
        </button>
      </p>
    </form>
  );
}

/** The account page's other way to verify the address: a code by mail, typed here. */
export function VerifyByCode(props: { email: string; onDone: () => void }) {
  const settings = usePageSettings();
  const t = useT();
  const [code, setCode] = useState("");
  const [touched, setTouched] = useState(false);
  const send = useMutation({
    mutationFn: () => unwrap(api.POST("/email-otp/send-verification-otp", { body: { email: props.email, type: "email-verification" } })),
  });
  const verify = useMutation({
    mutationFn: () => unwrap(api.POST("/email-otp/verify-email", { body: { email: props.email, otp: code.trim() } })),
    onSuccess: () => props.onDone(),
  });
  if (!settings.byMail) return null;
  if (!send.isSuccess)
    return (
      <div className="stack">
        <button type="button" className="link" disabled={send.isPending} onClick={() => send.mutate()}>
          {t("Verify with a code instead")}
        </button>
        <ErrorBox error={send.error} />
      </div>
    );
  return (
    <form
      aria-label={t("Verify with a code")}
      onSubmit={(e) => {
        e.preventDefault();
        setTouched(true);
        if (code.trim()) verify.mutate();
      }}
      noValidate
    >
      <p className="muted">{t("We emailed a 6-digit code to {email}. It works once, for 5 minutes.", { email: props.email })}</p>
      <Field
        label="Verification code"
        name="otp"
        autoComplete="one-time-code"
        value={code}
        onChange={setCode}
        error={touched && !code.trim() ? marked("Enter the 6-digit code.") : null}
      />
      <CodeError error={verify.error} />
      <div className="row">
        <Submit pending={verify.isPending}>{t("Verify")}</Submit>
        <button type="button" className="link" disabled={send.isPending} onClick={() => send.mutate()}>
          {t("Email me a new code")}
        </button>
      </div>
    </form>
  );
}

/** The account page's password card for an account without one: a first password by code. */
export function FirstPassword(props: { email: string; onDone: () => void }) {
  const settings = usePageSettings();
  const t = useT();
  const ask = useMutation({
    mutationFn: () => unwrap(api.POST("/email-otp/request-password-reset", { body: { email: props.email } })),
  });
  if (ask.isSuccess) return <ResetByCode email={props.email} onCancel={() => ask.reset()} onDone={props.onDone} />;
  return (
    <div className="stack">
      <p className="muted">
        {t("You sign in without a password (a code or link by email, a passkey or a provider).")}
        {settings.byMail ? ` ${t("To set one, we email you a code.")}` : ""}
      </p>
      {settings.byMail && (
        <div>
          <button type="button" className="secondary" disabled={ask.isPending} onClick={() => ask.mutate()}>
            {t("Set a password")}
          </button>
        </div>
      )}
      <ErrorBox error={ask.error} />
    </div>
  );
}
