import { useEffect, useState, type ReactNode } from 'react';

export const ConfirmTiming = {
  /** An armed button falls back after this long: a second click much later is not a confirmation. */
  ArmedMs: 4000,
} as const;

interface ArmedButtonProps {
  /** When false, one click acts (nothing much is at stake). */
  needsConfirm: boolean;
  label: ReactNode;
  /** Says what the second click will do, in words naming what it ends. */
  armedLabel: ReactNode;
  onConfirm(): void;
  className: string;
  armedClassName: string;
  title: string;
  armedTitle?: string;
  disabled?: boolean;
  testId?: string;
}

/** A button for what cannot be undone: the first click arms it (and says what will happen), the second acts. */
export function ArmedButton({ needsConfirm, label, armedLabel, onConfirm, className, armedClassName, title, armedTitle, disabled, testId }: ArmedButtonProps) {
  const [armed, setArmed] = useState(false);
  useEffect(() => {
    if (!armed) return;
    const timer = setTimeout(() => setArmed(false), ConfirmTiming.ArmedMs);
    return () => clearTimeout(timer);
  }, [armed]);
  useEffect(() => {
    if (disabled) setArmed(false);
  }, [disabled]);
  const click = () => {
    if (needsConfirm && !armed) {
      setArmed(true);
      return;
    }
    setArmed(false);
    onConfirm();
  };
  return (
    <button type="button" className={`btn ${armed ? armedClassName : className}`} disabled={disabled} onClick={click} title={armed ? (armedTitle ?? title) : title} data-testid={testId} data-armed={armed}>
      {armed ? armedLabel : label}
    </button>
  );
}
