// The second step of a sign-in for an account with two-factor sign-in on: a code from the
// authenticator app, or one of the backup codes, and whether to trust this browser.
import { useMutation } from "@tanstack/react-query";
import { useState } from "react";
import { api, unwrap } from "../api";
import { ErrorBox, Field, Submit } from "./ui";

/** What a sign-in answered when it waits for its second factor. */
export interface Challenge {
  twoFactorRedirect: boolean;
  twoFactorMethods: string[];
}

export function isChallenge(v: unknown): v is Challenge {
  return typeof v === "object" && v !== null && (v as Challenge).twoFactorRedirect === true;
}

export function SecondStep(props: { challenge: Challenge; onDone: () => void | Promise<void>; onCancel?: () => void }) {
  const totp = props.challenge.twoFactorMethods.includes("totp");
  const [backup, setBackup] = useState(!totp);
  const [code, setCode] = useState("");
  const [trust, setTrust] = useState(false);
  const [touched, setTouched] = useState(false);
  const verify = useMutation({
    mutationFn: () => {
      const body = { code: code.trim(), trustDevice: trust };
      return unwrap(backup ? api.POST("/two-factor/verify-backup-code", { body }) : api.POST("/two-factor/verify-totp", { body }));
    },
    onSuccess: () => props.onDone(),
  });
  const problem = touched && !code.trim() ? (backup ? "Enter one of your backup codes." : "Enter the 6-digit code.") : null;
  return (
    <form
      aria-label="Second sign-in step"
      onSubmit={(e) => {
        e.preventDefault();
        setTouched(true);
        if (code.trim()) verify.mutate();
      }}
      noValidate
    >
      <p className="muted">
        {backup
          ? "Enter one of the backup codes you saved when you set up two-factor sign-in. Each works once."
          : "Open your authenticator app and enter the 6-digit code it shows for this account."}
      </p>
      <Field
        label={backup ? "Backup code" : "Authentication code"}
        name="code"
        autoComplete="one-time-code"
        value={code}
        onChange={setCode}
        error={problem}
      />
      <label className="check">
        <input type="checkbox" checked={trust} onChange={(e) => setTrust(e.target.checked)} /> Trust this browser for 30 days
      </label>
      <ErrorBox error={verify.error} />
      <Submit pending={verify.isPending}>Verify</Submit>
      <p className="muted">
        {totp && (
          <button
            type="button"
            className="link"
            onClick={() => {
              setBackup(!backup);
              setCode("");
              setTouched(false);
              verify.reset();
            }}
          >
            {backup ? "Use the authenticator app instead" : "Use a backup code instead"}
          </button>
        )}
        {props.onCancel && (
          <>
            {" · "}
            <button type="button" className="link" onClick={props.onCancel}>
              Start over
            </button>
          </>
        )}
      </p>
    </form>
  );
}
