// The forgotten password: ask for a reset link (or a code by mail), and the page the link
// leads to, where the new password is chosen.
import { useMutation } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { Link, useSearchParams } from "react-router";
import { api, unwrap } from "../api";
import { ErrorBox, Field, Notice, PasswordField, Submit } from "../components/ui";
import { describeRedirectError } from "../errors";
import { marked, useT } from "../i18n";
import { usePageSettings } from "../settings";
import { emailProblem, newPasswordProblem, passwordHint } from "./auth";
import { ResetByCode } from "./bymail";

export function ForgotPassword() {
  const [params] = useSearchParams();
  const [email, setEmail] = useState(params.get("email") ?? "");
  const [touched, setTouched] = useState(false);
  const [byCode, setByCode] = useState(false);
  const settings = usePageSettings();
  const t = useT();
  const request = useMutation({
    mutationFn: () => unwrap(api.POST("/request-password-reset", { body: { email: email.trim(), redirectTo: "/reset-password" } })),
  });
  const requestCode = useMutation({
    mutationFn: () => unwrap(api.POST("/email-otp/request-password-reset", { body: { email: email.trim() } })),
    onSuccess: () => setByCode(true),
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setTouched(true);
    if (emailProblem(email)) return;
    request.mutate();
  };
  return (
    <main className="narrow">
      <div className="card">
        <h1>{t("Forgot your password?")}</h1>
        {byCode ? (
          <ResetByCode
            email={email.trim()}
            onCancel={() => {
              setByCode(false);
              requestCode.reset();
            }}
          />
        ) : request.isSuccess ? (
          <Notice>{t("If an account uses {email}, we sent it a link to choose a new password. It works for one hour.", { email: email.trim() })}</Notice>
        ) : (
          <form onSubmit={submit} noValidate>
            <p className="muted">{t("Enter your email address and we will send you a link to choose a new password.")}</p>
            <Field label="Email" name="email" type="email" autoComplete="email" value={email} onChange={setEmail} error={touched ? emailProblem(email) : null} />
            <ErrorBox error={request.error ?? requestCode.error} />
            <Submit pending={request.isPending}>{t("Send the link")}</Submit>
            {settings.byMail && (
              <button
                type="button"
                className="secondary"
                disabled={requestCode.isPending}
                onClick={() => {
                  setTouched(true);
                  if (!emailProblem(email)) requestCode.mutate();
                }}
              >
                {t("Email me a code instead")}
              </button>
            )}
          </form>
        )}
        <p className="muted">
          <Link to="/sign-in">{t("Back to sign-in")}</Link>
        </p>
      </div>
    </main>
  );
}

export function ResetPassword() {
  const [params] = useSearchParams();
  const token = params.get("token");
  const linkError = params.get("error");
  const [password, setPassword] = useState("");
  const [confirm, setConfirm] = useState("");
  const [touched, setTouched] = useState(false);
  const rules = usePageSettings().password;
  const t = useT();
  const reset = useMutation({
    mutationFn: () => unwrap(api.POST("/reset-password", { body: { newPassword: password, token: token ?? "" } })),
  });
  const errors = {
    password: touched ? newPasswordProblem(password, rules, t) : null,
    confirm: touched && confirm !== password ? marked("The two passwords differ.") : null,
  };
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setTouched(true);
    if (newPasswordProblem(password, rules) || confirm !== password) return;
    reset.mutate();
  };
  let body;
  if (linkError || !token) {
    body = (
      <>
        <div role="alert" className="alert">
          {linkError ? describeRedirectError(linkError, t) : t("This page needs the link from the email.")}
        </div>
        <p>
          <Link to="/forgot-password">{t("Ask for a new link")}</Link>
        </p>
      </>
    );
  } else if (reset.isSuccess) {
    body = (
      <>
        <Notice>
          {reset.data?.sessionsRevoked
            ? t("Your password was changed, and every device signed in to your account was signed out.")
            : t("Your password was changed. Devices already signed in stay signed in: sign them out from your account page if you did not expect them.")}
        </Notice>
        <p>
          <Link to="/sign-in">{t("Sign in with your new password")}</Link>
        </p>
      </>
    );
  } else {
    body = (
      <form onSubmit={submit} noValidate>
        <PasswordField label="New password" name="new-password" autoComplete="new-password" value={password} onChange={setPassword} error={errors.password} hint={passwordHint(rules, t)} />
        <PasswordField label="Repeat the new password" name="confirm-password" autoComplete="new-password" value={confirm} onChange={setConfirm} error={errors.confirm} />
        <ErrorBox error={reset.error} />
        <Submit pending={reset.isPending}>{t("Set the new password")}</Submit>
      </form>
    );
  }
  return (
    <main className="narrow">
      <div className="card">
        <h1>{t("Choose a new password")}</h1>
        {body}
      </div>
    </main>
  );
}
