/**
 * A name cut in the middle when it does not fit: "claude-refactor-sess…module-3". Agents name their
 * terminals alike and apart at the end (a part number, a module), so the end must stay readable;
 * the whole name is in the text (for screen readers, copy and tests) and in the tooltip.
 */
export const MiddleEllipsisConstants = {
  /** Characters kept whole at the end: "module-12", "part 3 of 6". */
  TailChars: 10,
  /** Shorter names are never split. */
  SplitAbove: 22,
} as const;

export function MiddleEllipsis({ text, className, testId }: { text: string; className?: string; testId?: string }) {
  const chars = [...text];
  if (chars.length <= MiddleEllipsisConstants.SplitAbove) {
    return (
      <span className={`middle-ellipsis ${className ?? ''}`} data-testid={testId}>
        <span className="me-head">{text}</span>
      </span>
    );
  }
  const cut = chars.length - MiddleEllipsisConstants.TailChars;
  return (
    <span className={`middle-ellipsis ${className ?? ''}`} data-testid={testId}>
      <span className="me-head">{chars.slice(0, cut).join('')}</span>
      <span className="me-tail">{chars.slice(cut).join('')}</span>
    </span>
  );
}
