package focus

// dataType is a column's data type and value format in the specification.
type dataType int

const (
	typeString   dataType = iota // String, StringHandling
	typeDecimal                  // Decimal, NumericFormat
	typeDateTime                 // Date/Time, DateTimeFormat: YYYY-MM-DDTHH:mm:ssZ
	typeCurrency                 // String, CurrencyFormat (ISO 4217 for national currencies)
	typeKeyValue                 // JSON, KeyValueFormat: an object of scalar values
	typeJSON                     // JSON whose structure this package checks elsewhere, or not at all
)

// level is a column's feature level.
type level int

const (
	conditional level = iota // present when the data generator supports the feature
	recommended
	mandatory
)

// column is one column of the FOCUS 1.3 Cost and Usage dataset.
type column struct {
	typ   dataType
	level level
	// notNull: the column "MUST NOT be null" (whenever it is present).
	notNull bool
}

// columns are the FOCUS 1.3 Cost and Usage columns (the specification's
// columns.mdpp), with their content constraints.
var columns = map[string]column{
	"AllocatedMethodDetails":             {typ: typeJSON},
	"AllocatedMethodId":                  {},
	"AllocatedResourceId":                {},
	"AllocatedResourceName":              {},
	"AllocatedTags":                      {typ: typeKeyValue},
	"AvailabilityZone":                   {level: recommended},
	"BilledCost":                         {typ: typeDecimal, level: mandatory, notNull: true},
	"BillingAccountId":                   {level: mandatory, notNull: true},
	"BillingAccountName":                 {level: mandatory},
	"BillingAccountType":                 {},
	"BillingCurrency":                    {typ: typeCurrency, level: mandatory, notNull: true},
	"BillingPeriodEnd":                   {typ: typeDateTime, level: mandatory, notNull: true},
	"BillingPeriodStart":                 {typ: typeDateTime, level: mandatory, notNull: true},
	"CapacityReservationId":              {},
	"CapacityReservationStatus":          {},
	"ChargeCategory":                     {level: mandatory, notNull: true},
	"ChargeClass":                        {level: mandatory},
	"ChargeDescription":                  {level: mandatory},
	"ChargeFrequency":                    {level: recommended, notNull: true},
	"ChargePeriodEnd":                    {typ: typeDateTime, level: mandatory, notNull: true},
	"ChargePeriodStart":                  {typ: typeDateTime, level: mandatory, notNull: true},
	"CommitmentDiscountCategory":         {},
	"CommitmentDiscountId":               {},
	"CommitmentDiscountName":             {},
	"CommitmentDiscountQuantity":         {typ: typeDecimal},
	"CommitmentDiscountStatus":           {},
	"CommitmentDiscountType":             {},
	"CommitmentDiscountUnit":             {},
	"ConsumedQuantity":                   {typ: typeDecimal},
	"ConsumedUnit":                       {},
	"ContractApplied":                    {typ: typeJSON},
	"ContractedCost":                     {typ: typeDecimal, level: mandatory, notNull: true},
	"ContractedUnitPrice":                {typ: typeDecimal},
	"EffectiveCost":                      {typ: typeDecimal, level: mandatory, notNull: true},
	"HostProviderName":                   {level: mandatory, notNull: true},
	"InvoiceId":                          {level: recommended},
	"InvoiceIssuerName":                  {level: mandatory, notNull: true},
	"ListCost":                           {typ: typeDecimal, level: mandatory, notNull: true},
	"ListUnitPrice":                      {typ: typeDecimal},
	"PricingCategory":                    {},
	"PricingCurrency":                    {typ: typeCurrency},
	"PricingCurrencyContractedUnitPrice": {typ: typeDecimal},
	"PricingCurrencyEffectiveCost":       {typ: typeDecimal},
	"PricingCurrencyListUnitPrice":       {typ: typeDecimal},
	"PricingQuantity":                    {typ: typeDecimal, level: mandatory},
	"PricingUnit":                        {level: mandatory},
	"RegionId":                           {},
	"RegionName":                         {},
	"ResourceId":                         {},
	"ResourceName":                       {},
	"ResourceType":                       {},
	"ServiceCategory":                    {level: mandatory, notNull: true},
	"ServiceName":                        {level: mandatory, notNull: true},
	"ServiceProviderName":                {level: mandatory, notNull: true},
	"ServiceSubcategory":                 {level: recommended, notNull: true},
	"SkuId":                              {},
	"SkuMeter":                           {},
	"SkuPriceDetails":                    {typ: typeKeyValue},
	"SkuPriceId":                         {},
	"SubAccountId":                       {},
	"SubAccountName":                     {},
	"SubAccountType":                     {},
	"TagDetails":                         {typ: typeJSON},
	"Tags":                               {typ: typeKeyValue},
}

// Allowed values of the enumerated columns.
var (
	chargeCategories  = set("Usage", "Purchase", "Tax", "Credit", "Adjustment")
	chargeFrequencies = set("One-Time", "Recurring", "Usage-Based")
	pricingCategories = set("Standard", "Dynamic", "Committed", "Other")
	serviceCategories = set("AI and Machine Learning", "Analytics", "Business Applications", "Compute", "Databases",
		"Developer Tools", "Multicloud", "Identity", "Integration", "Internet of Things", "Management and Governance",
		"Media", "Migration", "Mobile", "Networking", "Security", "Storage", "Web", "Other")
)

// requires lists, for a column, the columns its rules refer to: a file
// with the column must have them too (ConsumedUnit's nullability is
// defined by ConsumedQuantity, and so on).
var requires = map[string][]string{
	"AllocatedMethodDetails": {"AllocatedMethodId"},
	"AllocatedResourceId":    {"AllocatedMethodId", "AllocatedResourceName"},
	"AllocatedResourceName":  {"AllocatedResourceId"},
	"AllocatedTags":          {"AllocatedMethodId", "Tags"},
	"AllocatedMethodId":      {"AllocatedResourceId", "AllocatedResourceName"},
	"BillingAccountType":     {"BillingAccountId"},
	"ConsumedQuantity":       {"ConsumedUnit"},
	"ConsumedUnit":           {"ConsumedQuantity"},
	"ResourceName":           {"ResourceId"},
	"ResourceType":           {"ResourceId"},
	"SkuMeter":               {"SkuId"},
	"SkuPriceDetails":        {"SkuPriceId"},
	"SkuPriceId":             {"SkuId"},
	"SubAccountName":         {"SubAccountId"},
	"SubAccountId":           {"SubAccountName"},
	"SubAccountType":         {"SubAccountId"},
}

func set(vs ...string) map[string]bool {
	m := make(map[string]bool, len(vs))
	for _, v := range vs {
		m[v] = true
	}
	return m
}
