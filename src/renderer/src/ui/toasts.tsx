import { createContext, useCallback, useContext, useEffect, useMemo, useRef, useState, type ReactNode } from 'react';

/** Brief messages (a refused key, a failed request): they say what happened, then go away. */
export type ToastKind = 'info' | 'error';

interface Toast {
  id: number;
  kind: ToastKind;
  text: string;
  /** Toasts about one condition share a key, so the condition's end can take them away. */
  key?: string;
}

type Push = (text: string, kind?: ToastKind, key?: string) => void;
type Clear = (key: string) => void;

const ToastContext = createContext<{ push: Push; clear: Clear }>({ push: () => {}, clear: () => {} });

export const ToastTiming = { VisibleMs: 4500 } as const;

export function ToastProvider({ children }: { children: ReactNode }) {
  const [toasts, setToasts] = useState<Toast[]>([]);
  const nextId = useRef(1);
  const push = useCallback<Push>((text, kind = 'info', key) => {
    setToasts((list) => {
      // The same message again (a person typing into a read-only view) refreshes instead of stacking.
      const rest = list.filter((t) => t.text !== text);
      return [...rest.slice(-3), { id: nextId.current++, kind, text, key }];
    });
  }, []);
  const clear = useCallback<Clear>((key) => setToasts((list) => list.filter((t) => t.key !== key)), []);
  const dismiss = useCallback((id: number) => setToasts((list) => list.filter((t) => t.id !== id)), []);
  const value = useMemo(() => ({ push, clear }), [push, clear]);
  return (
    <ToastContext.Provider value={value}>
      {children}
      <div className="toasts" role="status" aria-live="polite" data-testid="toasts">
        {toasts.map((t) => (
          <ToastItem key={t.id} toast={t} onDone={dismiss} />
        ))}
      </div>
    </ToastContext.Provider>
  );
}

function ToastItem({ toast, onDone }: { toast: Toast; onDone: (id: number) => void }) {
  useEffect(() => {
    const timer = setTimeout(() => onDone(toast.id), ToastTiming.VisibleMs);
    return () => clearTimeout(timer);
  }, [toast.id, onDone]);
  return (
    <div className={`toast toast-${toast.kind}`} data-testid="toast">
      {toast.text}
    </div>
  );
}

export const useToast = (): Push => useContext(ToastContext).push;
export const useClearToast = (): Clear => useContext(ToastContext).clear;
