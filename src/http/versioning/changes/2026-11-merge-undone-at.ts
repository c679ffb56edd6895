// 2026-11: merge records carry `undoneAt` (SPEC §13). Older versions see the record as before, without it.
import { Type } from '@sinclair/typebox';
import type { VersionChange } from '../route.ts';
import { Page } from '../../pagination.ts';
import { ErrorBody, MergeRecord } from '../../../crm/merge/schema.ts';

const OldRecord = Type.Omit(MergeRecord, ['undoneAt']);

export const mergeUndoneAt: VersionChange = {
  version: '2026-11',
  description: 'Merge history records carry undoneAt (merges can be undone from 2026-11)',
  routes: {
    'customers.merges': {
      schema: { response: { 200: Page(OldRecord), 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody } },
      downgradeResponse: (body) => {
        const page = body as { data: Record<string, unknown>[] };
        if (!page || !Array.isArray(page.data)) return body; // an error answer passes as it is
        return { ...page, data: page.data.map(({ undoneAt: _omit, ...rest }) => rest) };
      },
    },
  },
};
