/** A pet in the store. */
export interface Pet {
  /** Unique id. */
  id: number;
  /** The pet's name. */
  name: string;
  /** Optional free-form tag. */
  tag?: string;
  /** Sale status. */
  status?: 'available' | 'pending' | 'sold';
}

/** What a client sends to create a pet. */
export interface NewPet {
  name: string;
  tag?: string;
}
