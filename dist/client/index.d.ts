import { type Client, type ClientOptions } from 'openapi-fetch';
import type { components, operations, paths } from './openapi.ts';
export type { components, operations, paths };
export type Schemas = components['schemas'];
export type Customer = Schemas['Customer'];
export type CustomerPage = Schemas['CustomerPage'];
export type MergeResult = Schemas['MergeResult'];
export type Subscription = Schemas['Subscription'];
export type ApiError = Schemas['Error'];
export type TokenResponse = Schemas['TokenResponse'];
export type BulbClient = Client<paths>;
export interface BulbClientOptions extends Omit<ClientOptions, 'baseUrl'> {
    /** Where Bulb listens, without a path: "https://bulb.example.com". */
    baseUrl: string;
    /** An API key or an OAuth access token (see fetchToken), sent as Authorization: Bearer. */
    token: string;
}
/** A client for every route of the latest version (types from the 2026-11 document). */
export declare function createBulbClient({ baseUrl, token, headers, ...rest }: BulbClientOptions): BulbClient;
/** OAuth 2.0 client credentials: exchanges an auth client's id and secret for an access token. */
export declare function fetchToken(baseUrl: string, clientId: string, clientSecret: string, scope?: string, fetchImpl?: typeof fetch): Promise<TokenResponse>;
