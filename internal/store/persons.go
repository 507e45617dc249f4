package store

// Persons holds persons, their tags and custom field values, and breadcrumbs.
type Persons interface{}
