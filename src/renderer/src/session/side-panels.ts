import type { ComponentType } from 'react';
import type { SessionSummary } from '../../../shared/types';

/**
 * Panels beside a terminal (a timeline, a replay): a feature adds one here and the session view shows
 * it to the right of the terminal, with the session it is about. None are built in.
 */
export interface SessionSidePanel {
  readonly id: string;
  /** Whether it has anything to show for this session (a panel may apply to some sessions only). */
  appliesTo?(session: SessionSummary): boolean;
  readonly Component: ComponentType<{ session: SessionSummary }>;
}

export const SESSION_SIDE_PANELS: SessionSidePanel[] = [];
