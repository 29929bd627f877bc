// Signed-out pages: sign-in, sign-up, the email-verification result, and the error page of
// `?error=` redirects. Their ways by mail (a code, a link) are in `bymail.tsx`, the forgotten
// password's pages in `password.tsx`.
import { useMutation, useQuery } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { Link, Navigate, useNavigate, useSearchParams } from "react-router";
import { api, ApiError, unwrap } from "../api";
import { PasskeySignIn } from "../components/passkey";
import { CodeSignIn, LinkSent, MailButtons, type Sent } from "./bymail";
import { isChallenge, SecondStep, type Challenge } from "../components/twofactor";
import { ErrorBox, Field, Notice, PasswordField, Submit } from "../components/ui";
import { describeRedirectError } from "../errors";
import { useAfterSignIn, SupportLine } from "../brand";
import { safeRedirect, withRedirect } from "../redirect";
import { useSession, useSessionChanged } from "../session";
import { marked, translate, useT, type T } from "../i18n";

const english: T = (s, v) => translate("en", s, v);
import { DEFAULT_SETTINGS, usePageSettings, type PasswordRules } from "../settings";

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export function emailProblem(email: string): string | null {
  if (!email.trim()) return marked("Enter your email address.");
  return EMAIL.test(email.trim()) ? null : marked("That email address does not look right.");
}

export function newPasswordProblem(password: string, rules: PasswordRules = DEFAULT_SETTINGS.password, t: T = english): string | null {
  if (password.length < rules.minLength) return t("Use at least {n} characters.", { n: rules.minLength });
  if (password.length > rules.maxLength) return t("Use at most {n} characters.", { n: rules.maxLength });
  return null;
}

/** The rules of a new password, said before anything is typed. */
export function passwordHint(rules: PasswordRules, t: T = english): string {
  return t("At least {n} characters.", { n: rules.minLength });
}

function SocialButtons({ redirectTo }: { redirectTo: string }) {
  const providers = useQuery({
    queryKey: ["social-providers"],
    queryFn: () => unwrap(api.GET("/social-providers")),
    staleTime: Infinity,
  });
  const t = useT();
  const go = useMutation({
    mutationFn: (provider: string) =>
      unwrap(
        api.POST("/sign-in/social", {
          body: { provider, callbackURL: redirectTo, errorCallbackURL: "/error", disableRedirect: true },
        }),
      ),
    onSuccess: (data) => {
      if (data.url) window.location.assign(data.url);
    },
  });
  if (!providers.data?.length) return null;
  return (
    <div className="stack">
      <div className="divider">{t("or")}</div>
      {providers.data.map((p) => (
        <button key={p.id} type="button" className="secondary" disabled={go.isPending} onClick={() => go.mutate(p.id)}>
          {t("Continue with {provider}", { provider: p.name })}
        </button>
      ))}
      <ErrorBox error={go.error} />
    </div>
  );
}

/** Sends a verification mail (again, when `again`: for a refused sign-in, a failed link, or
 * after a sign-up that mailed one). */
export function ResendVerification({ email: initial, again = true }: { email: string; again?: boolean }) {
  const [email, setEmail] = useState(initial);
  const t = useT();
  const resend = useMutation({
    mutationFn: () => unwrap(api.POST("/send-verification-email", { body: { email, callbackURL: "/verify-email" } })),
  });
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        resend.mutate();
      }}
    >
      {!initial && <Field label="Email" name="email" type="email" autoComplete="email" value={email} onChange={setEmail} required />}
      {resend.isSuccess ? (
        <Notice>{t("We sent a new verification link to {email}.", { email })}</Notice>
      ) : (
        <Submit pending={resend.isPending} className="secondary">
          {again ? t("Send the verification link again") : t("Send me a verification link")}
        </Submit>
      )}
      <ErrorBox error={resend.error} />
    </form>
  );
}

export function SignIn() {
  const [params] = useSearchParams();
  const redirectTo = safeRedirect(params.get("redirectTo"));
  const session = useSession();
  const [email, setEmail] = useState(params.get("email") ?? "");
  const [password, setPassword] = useState("");
  const [rememberMe, setRememberMe] = useState(true);
  const [touched, setTouched] = useState(false);
  const [emailChecked, setEmailChecked] = useState(false);
  const [sent, setSent] = useState<Sent | null>(null);
  const changed = useSessionChanged();
  const [challenge, setChallenge] = useState<Challenge | null>(null);
  const t = useT();
  // Where a provider's or a link's sign-in comes back to: redirectTo, else the tenant's home.
  const home = usePageSettings().homeUrl;
  const comeBack = params.get("redirectTo") ? redirectTo : (home ?? redirectTo);
  const land = useAfterSignIn(params.get("redirectTo"));
  const done = async () => {
    await changed();
    land();
  };
  const signIn = useMutation({
    mutationFn: () => unwrap(api.POST("/sign-in/email", { body: { email: email.trim(), password, rememberMe } })),
    onSuccess: async (data) => {
      // Two-factor sign-in on: no session until the second step.
      if (isChallenge(data)) setChallenge(data);
      else await done();
    },
  });
  const emailError = touched || emailChecked ? emailProblem(email) : null;
  const passwordError = touched && !password ? marked("Enter your password.") : null;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setTouched(true);
    if (emailProblem(email) || !password) return;
    signIn.mutate();
  };
  const unverified = signIn.error instanceof ApiError && signIn.error.code === "EMAIL_NOT_VERIFIED";
  // Already signed in (a bookmarked or shared link): on to where the page would lead.
  if (session.data && !signIn.isPending) return <Navigate to={comeBack.startsWith("/") ? safeRedirect(comeBack) : redirectTo} replace />;
  if (challenge)
    return (
      <main className="narrow">
        <div className="card">
          <h1>{t("Two-factor sign-in")}</h1>
          <SecondStep
            challenge={challenge}
            onDone={done}
            onCancel={() => {
              setChallenge(null);
              setPassword("");
              signIn.reset();
            }}
          />
        </div>
      </main>
    );
  if (sent)
    return (
      <main className="narrow">
        <div className="card">
          <h1>{t("Sign in")}</h1>
          {sent.kind === "code" ? (
            <CodeSignIn email={sent.email} onDone={done} onChallenge={setChallenge} onCancel={() => setSent(null)} />
          ) : (
            <LinkSent email={sent.email} onCancel={() => setSent(null)} />
          )}
        </div>
      </main>
    );
  return (
    <main className="narrow">
      <div className="card">
        <h1>{t("Sign in")}</h1>
        <form onSubmit={submit} noValidate>
          {/* "webauthn": the browser offers this site's passkeys in the field's autofill. */}
          <Field label="Email" name="email" type="email" autoComplete="username webauthn" value={email} onChange={setEmail} error={emailError} />
          <PasswordField label="Password" name="password" autoComplete="current-password" value={password} onChange={setPassword} error={passwordError} />
          <label className="check">
            <input type="checkbox" checked={rememberMe} onChange={(e) => setRememberMe(e.target.checked)} /> {t("Remember me")}
          </label>
          <ErrorBox error={signIn.error} />
          <Submit pending={signIn.isPending}>{t("Sign in")}</Submit>
        </form>
        {unverified && <ResendVerification email={email.trim()} />}
        <div className="stack">
          <div className="divider">{t("or")}</div>
          <MailButtons
            email={email}
            redirectTo={comeBack}
            onSent={setSent}
            check={() => {
              setEmailChecked(true);
              return !emailProblem(email);
            }}
          />
          <PasskeySignIn onDone={done} />
        </div>
        <SocialButtons redirectTo={comeBack} />
        <p className="muted">
          <Link to={withRedirect("/forgot-password", null, email ? { email } : {})}>{t("Forgot your password?")}</Link>
          {" · "}
          <Link to={withRedirect("/sign-up", params.get("redirectTo"), email ? { email } : {})}>{t("Create an account")}</Link>
        </p>
      </div>
    </main>
  );
}

/** The second step of a sign-in that came back from a social provider (its page, for a
 * user with two-factor sign-in on): the server's challenge cookie is set already. */
export function TwoFactorPage() {
  const t = useT();
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const changed = useSessionChanged();
  const methods = (params.get("methods") ?? "").split(",").filter(Boolean);
  // The provider flow's target: a path here, or an address of the tenant's (trusted) app.
  const land = useAfterSignIn(params.get("redirectTo"));
  return (
    <main className="narrow">
      <div className="card">
        <h1>{t("Two-factor sign-in")}</h1>
        <SecondStep
          challenge={{ twoFactorRedirect: true, twoFactorMethods: methods }}
          onDone={async () => {
            await changed();
            land();
          }}
          onCancel={() => navigate("/sign-in", { replace: true })}
        />
      </div>
    </main>
  );
}

export function SignUp() {
  const [params] = useSearchParams();
  const redirectTo = safeRedirect(params.get("redirectTo"));
  const [name, setName] = useState("");
  const [email, setEmail] = useState(params.get("email") ?? "");
  const [password, setPassword] = useState("");
  const [touched, setTouched] = useState(false);
  const [byMail, setByMail] = useState(false);
  const [sent, setSent] = useState<Sent | null>(null);
  const [challenge, setChallenge] = useState<Challenge | null>(null);
  const changed = useSessionChanged();
  const settings = usePageSettings();
  const rules = settings.password;
  const t = useT();
  const comeBack = params.get("redirectTo") ? redirectTo : (settings.homeUrl ?? redirectTo);
  const signUp = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST("/sign-up/email", {
          body: { name: name.trim(), email: email.trim(), password, callbackURL: withRedirect("/verify-email", params.get("redirectTo")) },
        }),
      ),
    onSuccess: async (data) => {
      if (!data.token) return; // verification required first: the page says so
      await changed();
      // The account page says "check your inbox" when a link went out with the sign-up.
      land({ verificationSent: settings.emailVerification.sendOnSignUp && !data.user.emailVerified });
    },
  });
  const errors = {
    name: touched || byMail ? (!name.trim() ? marked("Enter your name.") : null) : null,
    email: touched || byMail ? emailProblem(email) : null,
    password: touched ? newPasswordProblem(password, rules, t) : null,
  };
  const land = useAfterSignIn(params.get("redirectTo"));
  const done = async () => {
    await changed();
    land();
  };
  // A new account by a code: a user with two-factor sign-in on is no new account (the
  // address had one): its second step is the sign-in page's.
  if (challenge) return <Navigate to={withRedirect("/sign-in", params.get("redirectTo"), { email })} replace />;
  if (sent)
    return (
      <main className="narrow">
        <div className="card">
          <h1>{t("Create an account")}</h1>
          {sent.kind === "code" ? (
            <CodeSignIn email={sent.email} name={name} onDone={done} onChallenge={setChallenge} onCancel={() => setSent(null)} />
          ) : (
            <LinkSent email={sent.email} onCancel={() => setSent(null)} />
          )}
        </div>
      </main>
    );
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setTouched(true);
    if (!name.trim() || emailProblem(email) || newPasswordProblem(password, rules)) return;
    signUp.mutate();
  };
  return (
    <main className="narrow">
      <div className="card">
        <h1>{t("Create an account")}</h1>
        {signUp.isSuccess && !signUp.data.token ? (
          <Notice>{t("Check your inbox: we sent a link to {email} to verify your address before you sign in.", { email })}</Notice>
        ) : (
          <form onSubmit={submit} noValidate>
            <Field label="Name" name="name" autoComplete="name" value={name} onChange={setName} error={errors.name} />
            <Field label="Email" name="email" type="email" autoComplete="email" value={email} onChange={setEmail} error={errors.email} />
            <PasswordField label="Password" name="password" autoComplete="new-password" value={password} onChange={setPassword} error={errors.password} hint={passwordHint(rules, t)} />
            <ErrorBox error={signUp.error} />
            <Submit pending={signUp.isPending}>{t("Create account")}</Submit>
          </form>
        )}
        {!signUp.isSuccess && settings.byMail && (
          <div className="stack">
            <div className="divider">{t("or, without a password")}</div>
            <MailButtons
              email={email}
              name={name}
              redirectTo={comeBack}
              onSent={setSent}
              check={() => {
                setByMail(true);
                return !!name.trim() && !emailProblem(email);
              }}
            />
          </div>
        )}
        <SocialButtons redirectTo={comeBack} />
        <p className="muted">
          {t("Already have an account?")} <Link to={withRedirect("/sign-in", params.get("redirectTo"), email ? { email } : {})}>{t("Sign in")}</Link>
        </p>
      </div>
    </main>
  );
}

export function VerifyEmail() {
  const [params] = useSearchParams();
  const error = params.get("error");
  const next = params.get("redirectTo");
  const session = useSession();
  const user = session.data?.user;
  const t = useT();
  return (
    <main className="narrow">
      <div className="card">
        <h1>{t("Email verification")}</h1>
        {error ? (
          <div className="stack">
            <div role="alert" className="alert">
              {describeRedirectError(error, t)}
            </div>
            <ResendVerification email={user?.email ?? ""} />
          </div>
        ) : user && !user.emailVerified ? (
          <div className="stack">
            <p>{t("Your address {email} is not verified yet: follow the link we emailed you.", { email: user.email })}</p>
            <ResendVerification email={user.email} />
          </div>
        ) : (
          <div className="stack">
            <Notice>{t("Your email address is verified.")}</Notice>
            <p>
              {user ? (
                <Link to={safeRedirect(next)}>{t("Continue")}</Link>
              ) : (
                <Link to={withRedirect("/sign-in", next)}>{t("Sign in to continue")}</Link>
              )}
            </p>
          </div>
        )}
      </div>
    </main>
  );
}

export function ErrorPage() {
  const [params] = useSearchParams();
  const code = params.get("error") ?? "unknown";
  const t = useT();
  return (
    <main className="narrow">
      <div className="card">
        <h1>{t("Something went wrong")}</h1>
        <div role="alert" className="alert">
          {describeRedirectError(code, t)}
        </div>
        <p className="muted">{t("Code: {code}", { code })}</p>
        <p>
          <Link to="/">{t("Back to the start")}</Link>
        </p>
        <SupportLine />
      </div>
    </main>
  );
}

/** `/`: the account when signed in, else sign-in. Links mailed without a page of their own
 * land here too: a reset link's `?token=` goes on to the reset page, a failed link's `?error=`
 * to the error page. */
export function Home() {
  const session = useSession();
  const [params] = useSearchParams();
  const token = params.get("token");
  const error = params.get("error");
  const t = useT();
  if (token) return <Navigate to={`/reset-password?${new URLSearchParams({ token })}`} replace />;
  if (error) return <Navigate to={`/error?${new URLSearchParams({ error })}`} replace />;
  if (session.isPending) return <main className="narrow">{t("Loading…")}</main>;
  return session.data ? <Navigate to="/account" replace /> : <SignIn />;
}
